package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// done is a context that is already over: run does its work and returns
// instead of waiting for a signal.
func done() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func env(uid string) func(string) string {
	m := map[string]string{"POD_UID": uid, "POD_NAMESPACE": "default", "POD_NAME": "app-" + uid}
	return func(k string) string { return m[k] }
}

func TestRunFindsEarlierPodsMarkers(t *testing.T) {
	data, logs := t.TempDir(), t.TempDir()
	args := []string{"run", "--volume", data + "=data", "--volume", logs + "/=logs"}

	var out, errOut bytes.Buffer
	if code := run(done(), args, env("uid-1"), &out, &errOut); code != 0 {
		t.Fatalf("first pod: exit %d, stderr %q", code, errOut.String())
	}
	want := []string{
		"csisim-workload: " + data + " (claim default/data): wrote marker of pod uid-1; found 0 earlier marker(s); corrupt: none",
		"csisim-workload: " + logs + " (claim default/logs): wrote marker of pod uid-1; found 0 earlier marker(s); corrupt: none",
	}
	if got := lines(out.String()); !slices.Equal(got, want) {
		t.Fatalf("first pod printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	out.Reset()
	args = append(args, "--read-only-volume", data+"=data")
	if code := run(done(), args, env("uid-2"), &out, &errOut); code != 0 {
		t.Fatalf("second pod: exit %d, stderr %q", code, errOut.String())
	}
	want = []string{
		"csisim-workload: " + data + " (claim default/data): wrote marker of pod uid-2; found 1 earlier marker(s): uid-1; corrupt: none",
		"csisim-workload: " + logs + " (claim default/logs): wrote marker of pod uid-2; found 1 earlier marker(s): uid-1; corrupt: none",
		// Checked after the read-write mount of the same directory:
		// both pods' markers are there.
		"csisim-workload: " + data + " (claim default/data): read-only, wrote no marker; found 2 earlier marker(s): uid-1, uid-2; corrupt: none",
	}
	if got := lines(out.String()); !slices.Equal(got, want) {
		t.Fatalf("second pod printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRunReportsCorruptMarkers(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(done(), []string{"run", "--volume", dir + "=data"}, env("uid-1"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	path := filepath.Join(dir, ".csisim-workload", "uid-1.marker")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run(done(), []string{"run", "--read-only-volume", dir + "=data"}, env("uid-2"), &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if got, want := strings.TrimSpace(out.String()), "; found 0 earlier marker(s); corrupt: uid-1"; !strings.HasSuffix(got, want) {
		t.Fatalf("printed %q, want it to end in %q", got, want)
	}
}

func TestRunFailures(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := t.TempDir()
	for _, tc := range []struct {
		name     string
		args     []string
		env      func(string) string
		code     int
		inStderr string
	}{
		{"no mode", nil, env("u"), 2, "Usage"},
		{"unknown mode", []string{"sleep"}, env("u"), 2, `unknown mode "sleep"`},
		{"pause with an argument", []string{"pause", "x"}, env("u"), 2, "unexpected argument"},
		{"volume without claim", []string{"run", "--volume", ok}, env("u"), 2, "want PATH=CLAIM"},
		{"relative volume path", []string{"run", "--volume", "data=c"}, env("u"), 2, "not absolute"},
		{"stray argument", []string{"run", "x"}, env("u"), 2, `unexpected argument "x"`},
		{"no pod identity", []string{"run", "--volume", ok + "=c"}, func(string) string { return "" }, 2, "POD_UID, POD_NAMESPACE, POD_NAME not set"},
		// The volume that cannot be read fails the container; the good
		// one is still checked and printed.
		{"unreadable volume", []string{"run", "--volume", file + "=c", "--volume", ok + "=c"}, env("u"), 1, file + " (claim default/c): reading markers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(done(), tc.args, tc.env, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.inStderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d, stderr containing %q", code, errOut.String(), tc.code, tc.inStderr)
			}
			if tc.name == "unreadable volume" && !strings.Contains(out.String(), ok+" (claim default/c): wrote marker") {
				t.Fatalf("the readable volume was not reported: %q", out.String())
			}
		})
	}
}

func TestPauseWaitsForTheSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"pause"}, env("u"), &bytes.Buffer{}, &bytes.Buffer{}) }()
	select {
	case code := <-exited:
		t.Fatalf("pause returned %d before it was stopped", code)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if code := <-exited; code != 0 {
		t.Fatalf("pause exited %d when stopped, want 0", code)
	}
}

// TestStaticStandardLibraryOnly keeps the binary fit for an image that
// holds nothing else: no cgo (no libc to load) and, besides the standard
// library, only csisim's workload package.
func TestStaticStandardLibraryOnly(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	want := []string{"github.com/csisim/csisim/workload", "github.com/csisim/csisim/cmd/csisim-workload"}
	if got := lines(string(out)); !slices.Equal(got, want) {
		t.Fatalf("csisim-workload depends on %q, want only %q", got, want)
	}
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
