package labcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestOutputMatches(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"a\nb\nc", "a\nb", false},
		{"PASSED: 5 steps, 11.6s of cluster time in 172ms; 8 invariants held", "PASSED: 5 steps, ... of cluster time in ... ; 8 invariants held", true},
		{"PASSED: 5 steps, 11.6s of cluster time in 172ms; 7 invariants held", "PASSED: 5 steps, ... of cluster time in ... ; 8 invariants held", false},
		{"last seen: 1 item: pvc-d19", "last seen: 1 item: ...", true},
		{"last seen: 2 items: pvc-d19", "last seen: 1 item: ...", false},
		// Without " ... " a line is compared whole, spaces included.
		{"a  b", "a b", false},
		{"  +0.000s  CSI   x  CreateVolume   pvc-1 -> vol-2  OK  (3ms)", "  +0.000s  CSI   x  CreateVolume ... pvc- ... -> vol- ... OK", true},
	} {
		if ok := outputMatches(tc.got, tc.want); ok != tc.ok {
			t.Errorf("outputMatches(%q, %q) = %v, want %v", tc.got, tc.want, ok, tc.ok)
		}
	}
}

// A document's commands run in a directory the repository is linked into,
// and its sh ci blocks are checked against the CI script's stages, not run.
func TestCheckDocument(t *testing.T) {
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "data.txt"), []byte("from the repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ci := filepath.Join(t.TempDir(), "run")
	if err := os.WriteFile(ci, []byte("stage demo make demo\nstage test make test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text, wantErr string }{
		{name: "repo files and ci stages", text: "```sh ci\nmake demo   # the demo\nmake test\n```\n```sh\ncat data.txt\necho x > new.txt\n```\n```text expected\nfrom the repo\n```\n"},
		{name: "a ci command CI does not run", text: "```sh ci\nmake demo\nmake bench\n```\n```sh\ntrue\n```\n", wantErr: `doc.md:3: "make bench" is not a stage of`},
		{name: "expected output after a ci block", text: "```sh ci\nmake demo\n```\n```text expected\nx\n```\n", wantErr: "doc.md:4: an expected block must follow a sh block"},
		{name: "output differs", text: "```sh\ncat data.txt\n```\n```text expected\nfrom ... elsewhere\n```\n", wantErr: "the output is not the expected one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab, err := Parse("doc.md", tc.text)
			if err == nil {
				err = Check(context.Background(), lab, Config{BinDir: t.TempDir(), Log: &bytes.Buffer{}, RepoDir: repo, CIScript: ci})
			}
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(repo, "new.txt")); err == nil {
		t.Error("a document's command wrote into the repository")
	}
}

// A block that runs out of time is ended with everything it started, not
// only its shell: nothing it started lives on.
func TestTimedOutBlockEndsWhatItStarted(t *testing.T) {
	dir := t.TempDir()
	script := "sleep 600 &\necho $! > child.pid\nwait\n"
	if _, err := runBlock(context.Background(), dir, os.Environ(), script, time.Second); err == nil {
		t.Fatal("a block that outlived its timeout succeeded")
	}
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Killed, it may stay a zombie until init reaps it; a live sleep
	// would be in state S.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the block's sleep (pid %d) still runs: %s", pid, stat)
		}
	}
}
