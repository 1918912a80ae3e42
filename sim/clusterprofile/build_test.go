package clusterprofile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Two checkouts of one driver (the same package path, other sources)
// building it unversioned each run their own binary, also after the other
// has built: the cache keeps an unversioned build per module.
func TestUnversionedBuildIsKeptPerModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not building")
	}
	t.Setenv("CSISIM_CACHE", t.TempDir())
	checkout := func(says string) string {
		dir := t.TempDir()
		files := map[string]string{
			"go.mod":  "module example.com/drv\n\ngo 1.24\n",
			"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Print(\"" + says + "\") }\n",
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	a, b := checkout("a"), checkout("b")
	build := func(dir string) string {
		t.Chdir(dir)
		bin, err := Build(t.Context(), "example.com/drv", nil)
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
	binA := build(a)
	binB := build(b)
	if again := build(a); again != binA {
		t.Errorf("a second build of checkout a is %s, want %s", again, binA)
	}
	for bin, want := range map[string]string{binA: "a", binB: "b"} {
		out, err := exec.Command(bin).Output()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("%s says %q (%v), want %q: another checkout's build", bin, out, err, want)
		}
	}
}
