package cachedir

import (
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
