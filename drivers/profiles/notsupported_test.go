package profiles_test

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios/library"
)

// Every profile csisim ships, and those documented under docs/profiles
// (drivers the module proxy does not serve), parses, and its notSupported
// names scenarios the library has: a renamed scenario must not leave a
// reason behind that no longer skips anything.
func TestProfilesNameLibraryScenarios(t *testing.T) {
	var all []*profile.Profile
	for _, name := range profiles.Names() {
		p, err := profiles.Get(name)
		if err != nil {
			t.Fatalf("Get(%q): %v", name, err)
		}
		all = append(all, p)
	}
	docs, err := filepath.Glob("../../docs/profiles/*.yaml")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no profiles under docs/profiles (%v)", err)
	}
	for _, file := range docs {
		p, err := profile.Load(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		all = append(all, p)
	}
	for _, p := range all {
		for name, why := range p.NotSupported {
			if _, err := fs.Stat(library.FS, name+".yaml"); err != nil {
				t.Errorf("profile %s: notSupported %s: no such library scenario", p.File, name)
			}
			if why == "" {
				t.Errorf("profile %s: notSupported %s gives no reason", p.File, name)
			}
		}
	}
}
