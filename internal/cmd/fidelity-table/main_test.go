package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	const agrees = `{"scenario": "agrees", "sim": {"passed": true, "steps": 1, "total": 1}, "real": {"passed": true, "steps": 1, "total": 1}, "differences": []}`
	const explained = `{"scenario": "explained", "sim": {"passed": true, "steps": 1, "total": 1}, "real": {"passed": true, "steps": 1, "total": 1},
		"differences": [{"step": 1, "lastStep": 1, "object": "Node node-c", "field": "taints", "sim": null, "real": "x",
			"explanation": {"file": "e.yaml", "line": 7, "object": "Node", "why": "admission"}}]}`
	const unexplained = `{"scenario": "unexplained", "sim": {"passed": true, "steps": 1, "total": 1}, "real": {"passed": true, "steps": 1, "total": 1},
		"differences": [{"step": 1, "lastStep": 1, "object": "Pod default/app", "field": "phase", "sim": "Running", "real": "Pending", "unexplained": true}]}`
	tests := []struct {
		name  string
		files map[string]string
		// failed is what --fail-unexplained fails for; rows are lines the
		// table must hold.
		failed string
		rows   []string
	}{
		{name: "all agree", files: map[string]string{"agrees.json": agrees}, rows: []string{"| `agrees` | passed 1/1 | passed 1/1 | 0 | 0 | 0 | 0 | 0 |"}},
		{name: "explained", files: map[string]string{"agrees.json": agrees, "explained.json": explained},
			rows: []string{"| `explained` | passed 1/1 | passed 1/1 | 1 | 0 | 0 | 0 | 0 |", "  - 1 explained by line 7 (`Node`): admission"}},
		{name: "unexplained", files: map[string]string{"explained.json": explained, "unexplained.json": unexplained},
			failed: "1 differences unexplained in 1 scenarios",
			rows:   []string{"| `unexplained` | passed 1/1 | passed 1/1 | 1 | 0 | 0 | 1 | 0 |"}},
		{name: "a diff that wrote no report, with its log", files: map[string]string{"agrees.json": agrees, "two.json": "",
			"two.log": "running two\ncsisim: two.yaml runs CSI drivers | beside\n"},
			failed: "1 scenarios without a report",
			rows:   []string{"| `two` | no report | no report | | | | | | csisim: two.yaml runs CSI drivers \\| beside ("}},
		{name: "without a log", files: map[string]string{"three.json": "\n"}, failed: "1 scenarios without a report",
			rows: []string{"| `three` | no report | no report | | | | | | see "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			doc := filepath.Join(dir, "fidelity.md")
			if err := os.WriteFile(doc, []byte("intro\n"+begin+"\nold\n"+end+"\nrest\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var reports []string
			for name, content := range tc.files {
				path := filepath.Join(dir, name)
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(name, ".json") {
					reports = append(reports, path)
				}
			}
			failed, err := run(doc, "today", reports)
			if err != nil {
				t.Fatal(err)
			}
			if failed != tc.failed {
				t.Errorf("fails for %q, want %q", failed, tc.failed)
			}
			text, _ := os.ReadFile(doc)
			for _, want := range append(tc.rows, "Measured today.", "intro\n", "\nrest\n") {
				if !strings.Contains(string(text), want) {
					t.Errorf("the document lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(string(text), "\nold\n") {
				t.Errorf("the old table is still there:\n%s", text)
			}
		})
	}
}

func TestRunRefusesWhatIsNoReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.json")
	if err := os.WriteFile(path, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(filepath.Join(dir, "doc.md"), "", []string{path}); err == nil || !strings.Contains(err.Error(), "not a csisim diff --json report") {
		t.Errorf("got %v, want a refusal", err)
	}
}
