package profiles

import (
	"strings"
	"testing"
)

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
