package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	for _, name := range []string{"csisim", "mock", "csi-test-mock"} {
		p, err := Load(name)
		if err != nil {
			t.Fatalf("Load(%q): %v", name, err)
		}
		if p.Name == "" || !strings.HasSuffix(p.File, name+".yaml") {
			t.Errorf("Load(%q) = name %q, file %q", name, p.Name, p.File)
		}
	}
	file := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(file, []byte("name: d.example.com\nstart: {layout: combined, command: {path: /bin/d}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Load(file); err != nil || p.Name != "d.example.com" {
		t.Fatalf("Load(%s) = %v, %v", file, p, err)
	}
	if _, err := Load("hostpath"); err == nil || !strings.Contains(err.Error(), "csi-test-mock, csisim, csisim-file, mock") {
		t.Fatalf("Load(hostpath): %v, want the shipped profiles named", err)
	}
}

func TestEveryShippedProfileParses(t *testing.T) {
	names := Names()
	if len(names) < 2 {
		t.Fatalf("Names() = %v; want at least csisim and mock", names)
	}
	for _, name := range names {
		p, err := Get(name)
		if err != nil {
			t.Errorf("Get(%q): %v", name, err)
			continue
		}
		if p.Name == "" || !strings.HasSuffix(p.File, name+".yaml") {
			t.Errorf("Get(%q) = name %q, file %q", name, p.Name, p.File)
		}
	}
}

func TestGetUnknownNamesTheShippedOnes(t *testing.T) {
	_, err := Get("nosuch")
	if err == nil || !strings.Contains(err.Error(), "csisim") {
		t.Fatalf("Get(nosuch) = %v; want an error listing the shipped profiles", err)
	}
}

func TestDefaultIsCsisimsOwnDriver(t *testing.T) {
	p := MustDefault()
	if p.Name != "hostpath.csisim.io" || p.Start.Mock {
		t.Fatalf("default profile = %s (mock %v); want csisim's own driver", p.Name, p.Start.Mock)
	}
}
