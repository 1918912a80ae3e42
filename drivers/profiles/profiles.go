// Package profiles holds the driver profiles csisim ships (csisim's own
// driver, its in-memory mock, ...), built into the binary so that the
// default profile needs no file on disk. The files beside this one are the
// profiles; package profile reads them.
package profiles

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
)

//go:embed *.yaml
var files embed.FS

// Default is the profile a run uses when none is named: csisim's own driver.
const Default = "csisim"

// Names lists the shipped profiles, sorted.
func Names() []string {
	entries, _ := fs.Glob(files, "*.yaml")
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = strings.TrimSuffix(e, ".yaml")
	}
	sort.Strings(names)
	return names
}

// Get reads the shipped profile called name ("csisim", "mock", ...).
func Get(name string) (*profile.Profile, error) {
	data, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("driver profile %q: not a shipped profile; the shipped profiles are %s", name, strings.Join(Names(), ", "))
	}
	p, err := profile.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver profile %s/%s.yaml: %w", profile.Dir, name, err)
	}
	p.File = profile.Dir + "/" + name + ".yaml"
	return p, nil
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
