package csisimtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Go API page's example is a file that runs (make examples): a code
// block the page marks with <!-- example: PATH --> must be PATH's
// content, byte for byte.

// firstSuite is the example the Go API page must show: the suite a newcomer
// copies first.
const firstSuite = "examples/first-suite/suite_test.go"

// goAPIDoc is the page of the Go API, which shows it.
const goAPIDoc = "docs/go-api.md"

var exampleMarker = regexp.MustCompile(`^<!-- example: (\S+) -->$`)

// markedExamples maps each path a marker names to the fenced block that
// follows the marker.
func markedExamples(doc string) (map[string]string, error) {
	lines := strings.Split(doc, "\n")
	out := map[string]string{}
	for i := 0; i < len(lines); i++ {
		m := exampleMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		marker := i + 1
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("line %d: the example marker for %s is not followed by a fenced code block", marker, m[1])
		}
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("line %d: the code block of %s is not closed", marker, m[1])
		}
		out[m[1]] = strings.Join(lines[i+2:end], "\n") + "\n"
		i = end
	}
	return out, nil
}

// firstDifference is "" if got and want are equal, else where they part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := "(nothing)", "(nothing)"
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the block:\n  page: %s\n  file:   %s", i+1, gl, wl)
		}
	}
	return ""
}

func TestGoAPIPageShowsTheExamples(t *testing.T) {
	root := ".."
	doc, err := os.ReadFile(filepath.Join(root, goAPIDoc))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := markedExamples(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", goAPIDoc, err)
	}
	if _, ok := blocks[firstSuite]; !ok {
		t.Errorf("%s shows no <!-- example: %s --> block: it must show the first suite", goAPIDoc, firstSuite)
	}
	for path, block := range blocks {
		file, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%s shows %s: %v", goAPIDoc, path, err)
			continue
		}
		if d := firstDifference(block, string(file)); d != "" {
			t.Errorf("%s's block for %s differs from the file (copy the file into the block): %s", goAPIDoc, path, d)
		}
	}
}

func TestMarkedExamples(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]string
		err       string
	}{
		{"a marked block", "text\n<!-- example: a.go -->\n```go\npackage a\n\nfunc F() {}\n```\nmore\n```go\nunmarked\n```\n",
			map[string]string{"a.go": "package a\n\nfunc F() {}\n"}, ""},
		{"no marker", "```go\npackage a\n```\n", map[string]string{}, ""},
		{"marker without a block", "<!-- example: a.go -->\ntext\n", nil, "line 1: the example marker for a.go is not followed by a fenced code block"},
		{"block not closed", "x\n<!-- example: a.go -->\n```go\npackage a\n", nil, "line 2: the code block of a.go is not closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := markedExamples(tc.doc)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if d := firstDifference("a\nb\n", "a\nc\n"); !strings.Contains(d, "line 2 of the block:\n  page: b\n  file:   c") {
		t.Errorf("firstDifference: %q", d)
	}
	if d := firstDifference("a\n", "a\n"); d != "" {
		t.Errorf("firstDifference of equal texts: %q", d)
	}
}

// TestPackageDocShowsATestThatRuns checks that the package doc's first
// code block is a test of example_test.go, as it is there.
func TestPackageDocShowsATestThatRuns(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	block := firstCodeBlock(string(doc))
	if !strings.HasPrefix(block, "func Test") {
		t.Fatalf("the package doc's first code block is not a test:\n%s", block)
	}
	if !strings.Contains(string(tests), block) {
		t.Errorf("the package doc's first code block is not in example_test.go as it is (copy the test into the doc):\n%s", block)
	}
}

// firstCodeBlock is the first indented block of a Go doc comment, without
// the comment's "//\t".
func firstCodeBlock(doc string) string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		code, ok := strings.CutPrefix(line, "//\t")
		if !ok && len(out) > 0 {
			break
		}
		if ok {
			out = append(out, code)
		}
	}
	return strings.Join(out, "\n") + "\n"
}
