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
	if _, err := Load("hostpath"); err == nil || !strings.Contains(err.Error(), "csi-test-mock, csisim, mock") {
		t.Fatalf("Load(hostpath): %v, want the shipped profiles named", err)
	}
}
