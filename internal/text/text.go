// Package text holds the small text utilities csisim's packages share.
package text

import (
	"fmt"
	"strings"
)

// EditDistance counts the single-character insertions, deletions,
// substitutions and swaps of neighbours that turn a into b (optimal string
// alignment distance, in bytes: the names it compares are ASCII). Swaps
// count once because "wiat" for "wait" is the typical typo.
func EditDistance(a, b string) int {
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

// ReplaceSection replaces what doc holds between the line begin and the
// line end with body (which should end in a newline): the generated part
// of a document written partly by hand. It fails when either line is
// missing.
func ReplaceSection(doc, begin, end, body string) (string, error) {
	before, rest, ok := strings.Cut(doc, begin+"\n")
	_, after, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		return "", fmt.Errorf("no section between %q and %q", begin, end)
	}
	return before + begin + "\n" + body + end + after, nil
}
