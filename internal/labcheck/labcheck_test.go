package labcheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/testenv"
)

func TestParse(t *testing.T) {
	const serve = "```sh serve\ncsisim serve --kubeconfig k\n```\n"
	tests := []struct {
		name    string
		text    string
		steps   int
		wantErr string
	}{
		{name: "a command, its output, a timeline, and blocks only shown",
			text:  serve + "prose\n```yaml\nkind: Pod\n```\n```sh\nkubectl get pods\n```\n\n```text expected within=30s\nNo resources\n```\n```text timeline\ncreate Pod\n```\n",
			steps: 2},
		{name: "a document without serve", text: "```sh\necho hi\n```\n```text expected\nhi\n```\n", steps: 1},
		{name: "a timeline without serve", text: "```sh\ntrue\n```\n```text timeline\nx\n```\n", wantErr: "lab.md:4: a timeline block needs the serve block"},
		{name: "nothing to check", text: "```yaml\nkind: Pod\n```\n", wantErr: "lab.md: no commands to check"},
		{name: "two serve blocks", text: serve + serve, wantErr: "lab.md:4: the serve block must come before"},
		{name: "expected output without a command", text: serve + "```text expected\nx\n```\n", wantErr: "lab.md:4: an expected block must follow a sh block"},
		{name: "two expected outputs", text: serve + "```sh\ntrue\n```\n```text expected\n```\n```text expected\n```\n", wantErr: "lab.md:9: an expected block must follow"},
		{name: "a bad within", text: serve + "```sh\ntrue\n```\n```text expected within=soon\n```\n", wantErr: "lab.md:7: within=soon"},
		{name: "an unknown word", text: serve + "```sh quickly\ntrue\n```\n", wantErr: `lab.md:4: a sh block takes no "quickly"`},
		{name: "an open block", text: serve + "```sh\ntrue\n", wantErr: "lab.md: a fenced block is not closed"},
		{name: "a timeout", text: "```sh timeout=10m\ngo test ./x\n```\n", steps: 1},
		{name: "a bad timeout", text: "```sh timeout=long\ntrue\n```\n", wantErr: "lab.md:1: timeout=long"},
		{name: "a timeout on a ci block", text: "```sh ci timeout=1m\nmake demo\n```\n", wantErr: `lab.md:1: a sh block takes no "timeout=1m"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lab, err := Parse("lab.md", tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(lab.Steps) != tt.steps {
				t.Errorf("%d steps, want %d", len(lab.Steps), tt.steps)
			}
		})
	}
	lab, err := Parse("lab.md", tests[0].text)
	if err != nil {
		t.Fatal(err)
	}
	if st := lab.Steps[0]; st.Run.Text != "kubectl get pods\n" || st.Expected.Text != "No resources\n" || st.Expected.Within != 30*time.Second {
		t.Errorf("first step = %+v %+v", st.Run, st.Expected)
	}
	if tl := lab.Steps[1].Timeline; tl.Within != DefaultTimelineWithin || tl.Line != 15 {
		t.Errorf("timeline step = %+v", tl)
	}
	if lab, err := Parse("lab.md", "```sh timeout=10m\ngo test ./x\n```\n"); err != nil || lab.Steps[0].Run.Timeout != 10*time.Minute {
		t.Errorf("a block with timeout=10m: %v, %+v", err, lab)
	}
}

func TestKubeconfigOf(t *testing.T) {
	for serve, want := range map[string]string{
		"csisim serve --kubeconfig lab.kubeconfig --nodes a": "lab.kubeconfig",
		"csisim serve --kubeconfig=k":                        "k",
		"csisim serve --kubeconfig /tmp/k":                   "error",
		"csisim serve":                                       "error",
	} {
		got, err := kubeconfigOf(serve)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("kubeconfigOf(%q) = %q, want %q", serve, got, want)
		}
	}
}

// TestCheckCatchesWrongAnswers runs small labs against a real csisim serve
// and kubectl: a lab whose answers are true passes, and one whose stated
// answer or timeline is false fails at that block.
func TestCheckCatchesWrongAnswers(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is not on PATH, and CI must run the labs")
		}
		t.Skip("kubectl is not on PATH")
	}
	// The binary's directory holds csisim alone: the labs' PATH.
	binDir := filepath.Dir(testenv.CsisimBinary(t))
	const serve = "```sh serve\ncsisim serve --kubeconfig lab.kubeconfig --nodes node-1,node-2\n```\n"
	nodes := "```sh\nkubectl get nodes -o jsonpath='{.items[*].metadata.name}'\n```\n"
	tests := []struct {
		name    string
		lab     string
		wantErr string
	}{
		{name: "true answers", lab: serve + nodes + "```text expected\nnode-1 node-2\n```\n" +
			"```sh\ncsisim fault node-loss node=node-2\n```\n```text timeline\nFAULT csisim fault node-loss Node node-2\n```\n"},
		{name: "a wrong answer", lab: serve + nodes + "```text expected within=2s\nnode-1 node-3\n```\n",
			wantErr: "lab.md:4: the output is not the expected one (line 7) within 2s:\n--- expected:\nnode-1 node-3\n--- got:\nnode-1 node-2"},
		{name: "a timeline that does not happen", lab: serve + "```text timeline within=2s\nnode-loss\n```\n",
			wantErr: `lab.md:4: the timeline did not show "node-loss" within 2s`},
		{name: "a failing command", lab: serve + "```sh\ncsisim fault node-loss node=node-3\n```\n",
			wantErr: `there is no node "node-3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lab, err := Parse("lab.md", tt.lab)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			err = Check(context.Background(), lab, Config{BinDir: binDir, Log: &log})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check() = %v\n%s", err, log.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check() = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if entries, _ := os.ReadDir(os.TempDir()); len(entries) > 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "csisim-lab-") {
				t.Errorf("left behind %s", e.Name())
			}
		}
	}
}

// A document without serve has its commands run alone, in a directory of
// their own, with csisim on the PATH.
func TestCheckWithoutServe(t *testing.T) {
	binDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(binDir, "csisim"), []byte("#!/bin/sh\necho csisim $*\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, wantErr string }{
		{text: "```sh\necho hi > f\ncsisim run x\n```\n```text expected\ncsisim run x\n```\n```sh\ncat f\n```\n```text expected\nhi\n```\n"},
		{text: "```sh\ncsisim run x\n```\n```text expected\ncsisim run y\n```\n", wantErr: "doc.md:1: the output is not the expected one (line 4)"},
	} {
		lab, err := Parse("doc.md", tc.text)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(context.Background(), lab, Config{BinDir: binDir, Log: &bytes.Buffer{}})
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Check() = %v, want %q", err, tc.wantErr)
		}
	}
}

func TestLineMatches(t *testing.T) {
	line := " +10.100s  CSI   kubelet:node-1           NodeUnpublishVolume        vol-4d  Internal  ERROR: remove /x: directory not empty"
	for want, ok := range map[string]bool{
		"CSI kubelet:node-1 NodeUnpublishVolume":                   true,
		"NodeUnpublishVolume ... Internal ERROR: ... not empty":    true,
		"kubelet:node-1 NodeUnpublishVolume vol-4d":                true,
		"NodeUnpublishVolume ... kubelet:node-1":                   false,
		"CSI kubelet:node-2":                                       false,
		"NodeUnpublishVolume ... Internal ERROR: ... is not empty": false,
	} {
		if got := lineMatches(line, want); got != ok {
			t.Errorf("lineMatches(%q) = %v, want %v", want, got, ok)
		}
	}
}

// TestEveryLabParses reads the labs of docs/labs (make labs-check runs
// them): each parses, has its goal, questions and answers, and checks
// outputs and the timeline.
func TestEveryLabParses(t *testing.T) {
	paths, err := filepath.Glob("../../docs/labs/[0-9]*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 6 {
		t.Fatalf("%d labs in docs/labs, want at least 6", len(paths))
	}
	for _, path := range paths {
		lab, err := ParseFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		expected, timelines := 0, 0
		for _, st := range lab.Steps {
			if st.Expected != nil {
				expected++
			}
			if st.Timeline != nil {
				timelines++
			}
		}
		if expected < 3 || timelines < 1 {
			t.Errorf("%s checks %d outputs and %d timelines, want at least 3 and 1", path, expected, timelines)
		}
		data, _ := os.ReadFile(path)
		for _, section := range []string{"## Goal", "Questions", "<details><summary>Answer"} {
			if !strings.Contains(string(data), section) {
				t.Errorf("%s has no %q", path, section)
			}
		}
	}
}

// TestCheckedDocsParse reads the documents make labs-check runs without a
// cluster: each parses, has no serve block, and checks outputs.
func TestCheckedDocsParse(t *testing.T) {
	for _, path := range []string{"../../docs/profiles/walkthrough.md"} {
		lab, err := ParseFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		expected := 0
		for _, st := range lab.Steps {
			if st.Expected != nil {
				expected++
			}
		}
		if lab.Serve.Kind == Serve || expected == 0 {
			t.Errorf("%s: serve %v, %d expected outputs: want no serve and some outputs", path, lab.Serve.Kind == Serve, expected)
		}
	}
}

// TestMain removes the csisim binary the tests built.
func TestMain(m *testing.M) { testenv.Main(m) }
