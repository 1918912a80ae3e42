package scenarios

import "strings"

// suggest returns the candidate closest to word, or "" when none is close
// enough to be a likely typo. Case, '-' and '_' are ignored, so "json_path"
// suggests "jsonpath" and "labelselector" suggests "labelSelector".
func suggest(word string, candidates []string) string {
	w := normalizeWord(word)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(w, normalizeWord(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 1
	if len(w) >= 5 {
		limit = 2
	}
	if bestDist < 0 || bestDist > limit {
		return ""
	}
	return best
}

func normalizeWord(s string) string {
	return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s))
}

// editDistance counts the single-character insertions, deletions,
// substitutions and swaps of neighbours that turn a into b (optimal string
// alignment distance, in bytes: field and method names are ASCII). Swaps
// count once because "wiat" for "wait" is the typical typo.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// didYouMean formats the hint appended to an "unknown ..." message.
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return ` (did you mean "` + s + `"?)`
	}
	return ""
}
