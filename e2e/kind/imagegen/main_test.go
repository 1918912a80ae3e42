package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	out, imgs, err := parse([]string{"--out", "x.tar", "--tag", "a:1", "--tag", "b:2", "--entrypoint", "/bin/sh -c", "--layer", "l1.tar", "--layer", "l2.tar",
		"--file", "/usr/bin/tool=/tmp/tool", "--env", "container=docker", "--stop-signal", "SIGRTMIN+3"})
	if err != nil {
		t.Fatal(err)
	}
	if out != "x.tar" || len(imgs) != 2 || imgs[0].Tag != "a:1" || imgs[1].Tag != "b:2" {
		t.Fatalf("out %q, images %+v", out, imgs)
	}
	for _, img := range imgs {
		if !slices.Equal(img.Entrypoint, []string{"/bin/sh", "-c"}) || !slices.Equal(img.Layers, []string{"l1.tar", "l2.tar"}) ||
			img.Files["/usr/bin/tool"] != "/tmp/tool" || !slices.Equal(img.Env, []string{"container=docker"}) || img.StopSignal != "SIGRTMIN+3" {
			t.Errorf("image %+v", img)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tag", "a:1"}, "--out is required"},
		{[]string{"--out", "x.tar"}, "--tag is required"},
		{[]string{"--out", "x.tar", "--tag", "a:1", "--file", "/x"}, "want /path/in/image=host-file"},
		{[]string{"--out", "x.tar", "--tag", "a:1", "extra"}, `unexpected argument "extra"`},
		{[]string{"--out", "x.tar", "--tag", "a:1", "--dir", "/x=/nonexistent-csisim-dir"}, "no such file"},
	} {
		if _, _, err := parse(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestRun writes an archive and says 1 when it cannot.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!x"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	if code := run([]string{"--out", out, "--tag", "csisim.local/tool:v1", "--file", "/tool=" + bin}, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Fatalf("archive: %v", err)
	}
	if code := run([]string{"--out", out, "--tag", "csisim.local/tool:v1", "--file", "/tool=" + filepath.Join(dir, "none")}, io.Discard); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
	if code := run([]string{"--tag", "x:1"}, io.Discard); code != 2 {
		t.Errorf("no --out: exit %d, want 2", code)
	}
}

// TestParseDir: --dir adds the files below a directory, at their paths
// below the image path.
func TestParseDir(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "steps/b.yaml"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, imgs, err := parse([]string{"--out", "x.tar", "--tag", "a:1", "--dir", "/usr/share/lib=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/usr/share/lib/a.yaml": filepath.Join(dir, "a.yaml"), "/usr/share/lib/steps/b.yaml": filepath.Join(dir, "steps/b.yaml")}
	if len(imgs[0].Files) != len(want) {
		t.Fatalf("files %v, want %v", imgs[0].Files, want)
	}
	for k, v := range want {
		if imgs[0].Files[k] != v {
			t.Errorf("files %v, want %v", imgs[0].Files, want)
		}
	}
}
