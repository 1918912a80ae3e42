package scenarios

import (
	"strings"

	"github.com/csisim/csisim/internal/text"
)

// suggest returns the candidate closest to word, or "" when none is close
// enough to be a likely typo. Case, '-' and '_' are ignored, so "json_path"
// suggests "jsonpath" and "labelselector" suggests "labelSelector".
func suggest(word string, candidates []string) string {
	w := normalizeWord(word)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := text.EditDistance(w, normalizeWord(c))
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

// didYouMean formats the hint appended to an "unknown ..." message.
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return ` (did you mean "` + s + `"?)`
	}
	return ""
}
