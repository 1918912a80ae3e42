package unmodelled

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	itext "github.com/csisim/csisim/internal/text"
)

// statusDoc is docs/status.md, from this package's directory.
var statusDoc = filepath.Join("..", "..", "docs", "status.md")

var updateStatusDoc = flag.Bool("update-status", false, "rewrite docs/status.md's table of what csisim does not model (go generate ./sim/unmodelled)")

// The table sits between these lines of docs/status.md.
const (
	tableBegin = "<!-- unmodelled table: generated from sim/unmodelled by `go generate ./sim/unmodelled`; do not edit -->"
	tableEnd   = "<!-- end of unmodelled table -->"
)

// TestStatusDocUnmodelledTable: docs/status.md lists every field and kind
// of the table as the table says now.
func TestStatusDocUnmodelledTable(t *testing.T) {
	doc, err := os.ReadFile(statusDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := itext.ReplaceSection(string(doc), tableBegin, tableEnd, markdown())
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
		t.Fatal("docs/status.md's table of what csisim does not model is stale; regenerate it with\n\tgo generate ./sim/unmodelled")
	}
}

// markdown is the table of Fields and Kinds.
func markdown() string {
	var b strings.Builder
	b.WriteString("| object | field | refused when | it would change | why csisim does not act on it | use |\n|---|---|---|---|---|---|\n")
	for _, r := range Fields {
		object, path := strings.Join(r.Kinds, ", "), r.Path
		if r.PodSpec {
			object, path = "Pod, pod templates", "spec."+r.Path
		}
		when := r.When
		if when == "" {
			when = "set"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | `%s` |\n", object, path, when, r.Changes, r.Why, r.Needs)
	}
	for _, k := range Kinds {
		fmt.Fprintf(&b, "| kind %s (%s) | | applied | %s | %s | `%s` |\n", k.Kind, strings.TrimPrefix(k.Group+"/"+k.Version, "/"), k.Changes, k.Why, k.Needs)
	}
	return b.String()
}
