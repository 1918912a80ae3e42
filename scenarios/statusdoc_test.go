package scenarios_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	itext "github.com/csisim/csisim/internal/text"
	"github.com/csisim/csisim/scenarios"
)

// statusDoc is docs/status.md, from this package's directory.
var statusDoc = filepath.Join("..", "docs", "status.md")

var updateStatusDoc = flag.Bool("update-status", false, "rewrite docs/status.md's library table from scenarios/library (go generate ./scenarios)")

// The library table sits between these lines of docs/status.md; the rest
// of the page is written by hand.
const (
	libraryTableBegin = "<!-- library table: generated from scenarios/library by `go generate ./scenarios`; do not edit -->"
	libraryTableEnd   = "<!-- end of library table -->"
)

// TestStatusDocLibraryTable: docs/status.md lists every scenario of the
// library with the first sentence of its description, what it needs of a
// driver and the faults it injects, as the files say now.
func TestStatusDocLibraryTable(t *testing.T) {
	table := libraryTable(t)
	doc, err := os.ReadFile(statusDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := itext.ReplaceSection(string(doc), libraryTableBegin, libraryTableEnd, table)
	if err != nil {
		t.Fatalf("%s: %v", statusDoc, err)
	}
	if *updateStatusDoc {
		if err := os.WriteFile(statusDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(doc) != want {
		t.Fatalf("docs/status.md's library table is stale (the library makes %d lines of it);\nregenerate it with\n\tgo generate ./scenarios",
			strings.Count(table, "\n"))
	}
}

// libraryTable is the markdown table of the library's scenarios, by name.
func libraryTable(t *testing.T) string {
	files, err := filepath.Glob(filepath.Join("library", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no library scenarios: %v", err)
	}
	var b strings.Builder
	b.WriteString("| scenario | what it shows | needs of the driver | faults |\n|---|---|---|---|\n")
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		var needs, faults []string
		for _, n := range sc.Needs {
			needs = append(needs, "`"+string(n)+"`")
		}
		for _, n := range sc.Lacks {
			needs = append(needs, "no `"+string(n)+"`")
		}
		for _, s := range slices.Concat(sc.Steps, sc.Finally) {
			if s.Fault != nil && !slices.Contains(faults, "`"+string(s.Fault.Kind)+"`") {
				faults = append(faults, "`"+string(s.Fault.Kind)+"`")
			}
		}
		fmt.Fprintf(&b, "| [`%s`](../scenarios/library/%s) | %s | %s | %s |\n", sc.Name, filepath.Base(f),
			cell(firstSentence(sc.Description)), strings.Join(needs, ", "), strings.Join(faults, ", "))
	}
	return b.String()
}

// firstSentence is the description up to the end of its first sentence: a
// full stop followed by a space and a letter or a parenthesis, not after an
// abbreviation (so that "v1.37" and "e.g. a" do not end it), or the end of
// the first line.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	r := []rune(s)
	for i := 0; i+2 < len(r); i++ {
		if r[i] != '.' || r[i+1] != ' ' || !(unicode.IsLetter(r[i+2]) || r[i+2] == '(') {
			continue
		}
		words := strings.Fields(string(r[:i]))
		if last := words[len(words)-1]; last != "e.g" && last != "i.e" && last != "vs" {
			return string(r[:i+1])
		}
	}
	return s
}

// cell makes text safe in a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func TestFirstSentence(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"One claim. Then more.", "One claim."},
		{"v1.37 kubelets, e.g. the real one. Next", "v1.37 kubelets, e.g. the real one."},
		{"First line\nsecond line", "First line"},
		{"No full stop", "No full stop"},
		{"Ends here. (An aside.)", "Ends here."},
		{"Online expansion. csisim's driver grows it.", "Online expansion."},
	} {
		if got := firstSentence(tt.in); got != tt.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
