// Package profiles holds the driver profiles csisim ships (csisim's own
// driver, its in-memory mock, csi-test's mock driver, ...), built into the
// csisim binary so that `--driver csisim` works wherever it runs, and
// finds a profile by name or file. The files beside this one are the
// profiles; package profile reads them.
package profiles

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
)

//go:embed *.yaml
var shipped embed.FS

// Default is the profile a run uses when none is named: csisim's own driver.
const Default = "csisim"

// Names lists the shipped profiles, sorted.
func Names() []string {
	entries, _ := fs.Glob(shipped, "*.yaml")
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = strings.TrimSuffix(e, ".yaml")
	}
	sort.Strings(names)
	return names
}

// Get reads the shipped profile called name ("csisim", "mock", ...).
func Get(name string) (*profile.Profile, error) {
	data, err := shipped.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("driver profile %q: no such shipped profile (they are %s; a profile file is named by its path)",
			name, strings.Join(Names(), ", "))
	}
	p, err := profile.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver profile %s/%s.yaml: %w", profile.Dir, name, err)
	}
	p.File = path.Join(profile.Dir, name+".yaml")
	return p, nil
}

// Load reads the profile nameOrFile names: a file (a path with a slash, or
// a name ending in .yaml), as profile.Resolve tells them apart, or the
// name of a shipped profile (csisim, csisim-file, mock, csi-test-mock).
func Load(nameOrFile string) (*profile.Profile, error) {
	if strings.ContainsRune(nameOrFile, '/') || strings.HasSuffix(nameOrFile, ".yaml") {
		return profile.Load(nameOrFile)
	}
	return Get(nameOrFile)
}

// MustDefault returns the default profile; the shipped file is checked by
// this package's tests, so failing here is a build defect.
func MustDefault() *profile.Profile {
	p, err := Get(Default)
	if err != nil {
		panic(err)
	}
	return p
}
