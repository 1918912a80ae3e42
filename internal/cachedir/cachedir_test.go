package cachedir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoot(t *testing.T) {
	t.Setenv("CSISIM_CACHE", "/somewhere/else")
	if got := Root(); got != "/somewhere/else" {
		t.Errorf("with CSISIM_CACHE: Root() = %s, want /somewhere/else", got)
	}
	t.Setenv("CSISIM_CACHE", "")
	t.Setenv("HOME", "/home/someone")
	if got, want := Root(), filepath.Join("/home/someone", ".cache", "csisim"); got != want {
		t.Errorf("without CSISIM_CACHE: Root() = %s, want %s", got, want)
	}
}

// Two modules (checkouts) get two keys; one module the same key each time.
func TestModuleKey(t *testing.T) {
	here, err := ModuleKey()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := ModuleKey(); again != here || len(here) != 16 {
		t.Errorf("ModuleKey() = %q then %q, want one 16-digit key", here, again)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(other)
	if there, err := ModuleKey(); err != nil || there == here {
		t.Errorf("ModuleKey() in another module = %q, %v; want a key other than %q", there, err, here)
	}
}
