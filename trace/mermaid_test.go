package trace

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/trace/htmltest"
)

func mermaidOf(t *testing.T, tl Timeline) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteMermaid(&buf, tl); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// The rules of Mermaid's sequence diagram lexer the diagram must keep: a
// text ends at #, ; and the newline, so those are written as entity codes
// (#35;), and so is what Mermaid would read as HTML or a directive.
var (
	participantLine = regexp.MustCompile(`^    participant (L\d+) as (.+)$`)
	messageLine     = regexp.MustCompile(`^    (L\d+)(->>|-x)(L\d+): (.+)$`)
	noteLine        = regexp.MustCompile(`^    Note over (L\d+)(?:,(L\d+))?: (.+)$`)
	entityCode      = regexp.MustCompile(`#\d+;`)
)

func checkMermaidText(t *testing.T, n int, text string) {
	t.Helper()
	if plain := entityCode.ReplaceAllString(text, ""); strings.ContainsAny(plain, "#;<>&%\"\\`\n") {
		t.Errorf("line %d: %q holds a character Mermaid reads as syntax", n, text)
	}
}

func TestMermaidSyntax(t *testing.T) {
	tl := sampleTimeline()
	lines := strings.Split(strings.TrimSuffix(mermaidOf(t, tl), "\n"), "\n")
	if lines[0] != "sequenceDiagram" {
		t.Fatalf("first line %q", lines[0])
	}
	declared := map[string]string{}
	var messages, notes, crosses, violations int
	for i, l := range lines[1:] {
		n := i + 2
		if m := participantLine.FindStringSubmatch(l); m != nil {
			if messages+notes > 0 {
				t.Errorf("line %d: a participant after the messages", n)
			}
			declared[m[1]] = m[2]
			checkMermaidText(t, n, m[2])
			continue
		}
		var refs []string
		var text string
		if m := messageLine.FindStringSubmatch(l); m != nil {
			refs, text = []string{m[1], m[3]}, m[4]
			messages++
			if m[2] == "-x" {
				crosses++
			}
		} else if m := noteLine.FindStringSubmatch(l); m != nil {
			refs, text = []string{m[1], m[2]}, m[3]
			notes++
			if strings.HasPrefix(text, "INVARIANT ") {
				violations++
				if m[1] != "L1" || m[2] != "L13" {
					t.Errorf("line %d: a violation over %s,%s, want all the lanes", n, m[1], m[2])
				}
			}
		} else {
			t.Errorf("line %d is no participant, message or note: %q", n, l)
			continue
		}
		for _, r := range refs {
			if _, ok := declared[r]; r != "" && !ok {
				t.Errorf("line %d: participant %s is not declared", n, r)
			}
		}
		checkMermaidText(t, n, text)
	}
	// API writes and CSI calls are messages; steps, faults and data
	// checks notes; #12 failed.
	var api, csi int
	for _, e := range tl.Entries {
		switch e.Kind {
		case API:
			api++
		case CSI:
			csi++
		}
	}
	if len(declared) != len(tl.lanes()) || messages != api+csi || notes != len(tl.Entries)-api-csi+len(tl.Violations) ||
		crosses != 1 || violations != 2 {
		t.Errorf("%d participants, %d messages (%d failed), %d notes (%d violations); want %d, %d (1), %d (2)",
			len(declared), messages, crosses, notes, violations, len(tl.lanes()), api+csi, len(tl.Entries)-api-csi+2)
	}
	if !strings.Contains(mermaidOf(t, tl), "    L9-xL13: #35;12 +16.500s NodeStageVolume vol-1 Internal ERROR: rpc error: code = Internal desc = injected#59; retry\n"+
		"    Note over L1,L13: INVARIANT single-node violated: volume vol-1 staged on node-1 while #35;4#59; #60;bad#62;\n") {
		t.Errorf("the failed call and its violation are not as expected:\n%s", mermaidOf(t, tl))
	}
}

func TestMermaidText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text: a/b (c) [d] {e}": "plain text: a/b (c) [d] {e}",
		"#1; <b> & 50%":               "#35;1#59; #60;b#62; #38; 50#37;",
		"two\nlines\r\tand tab ":      "two lines  and tab",
		`"quoted" back\slash ` + "`":  "#34;quoted#34; back#92;slash #96;",
	} {
		if got := mermaidText(in); got != want {
			t.Errorf("mermaidText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMermaidInMermaid has Mermaid itself (the npm package mermaid, its
// dist/mermaid.min.js named by CSISIM_MERMAID_JS; .ci/run installs it)
// parse and render the diagram in headless Chromium.
func TestMermaidInMermaid(t *testing.T) {
	lib := os.Getenv("CSISIM_MERMAID_JS")
	if lib == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CSISIM_MERMAID_JS is not set, and CI must check the diagram with Mermaid")
		}
		t.Skip("CSISIM_MERMAID_JS (the npm package mermaid's dist/mermaid.min.js) is not set: the diagram is checked by its syntax rules only")
	}
	htmltest.Chromium(t)
	js, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	for name, diagram := range map[string]string{
		"sample": mermaidOf(t, sampleTimeline()),
		// The check can fail: a raw ; ends a text.
		"broken": "sequenceDiagram\n    participant L1 as a\n    Note over L1: x ; y\n",
	} {
		src, _ := json.Marshal(diagram)
		page := `<!DOCTYPE html><html><body><div id="timeline"></div><div id="out">pending</div>` +
			`<script>` + strings.ReplaceAll(string(js), "</script", `<\/script`) + `</script><script>
mermaid.initialize({startOnLoad: false});
var src = ` + string(src) + `;
mermaid.parse(src).then(function () { return mermaid.render("d", src); }).then(function (r) {
  document.getElementById("out").textContent = "rendered " + (r.svg.match(/<text/g) || []).length + " texts";
}).catch(function (e) { document.getElementById("out").textContent = "ERROR " + (e.message || e); });
</script></body></html>`
		file := filepath.Join(t.TempDir(), name+".html")
		if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		out := htmltest.Text(htmltest.ByID(htmltest.DOM(t, "file://"+file, 20*time.Second), "out"))
		switch {
		case name == "broken" && !strings.HasPrefix(out, "ERROR Parse error"):
			t.Errorf("Mermaid took a broken diagram: %s", out)
		case name != "broken" && !strings.HasPrefix(out, "rendered "):
			t.Errorf("Mermaid on the %s diagram: %s\n%s", name, out, diagram)
		}
	}
}
