// Package profiles holds the driver profiles csisim ships (the YAML files
// beside this one), built into the csisim binary so that `--driver csisim`
// works wherever it runs, and finds a profile by name or file.
package profiles

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
)

//go:embed *.yaml
var shipped embed.FS

// Names are the shipped profiles' names, sorted.
func Names() []string {
	entries, _ := shipped.ReadDir(".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Load reads the profile nameOrFile names: a file (a path with a slash, or
// a name ending in .yaml), as profile.Resolve tells them apart, or the
// name of a shipped profile (csisim, mock, csi-test-mock).
func Load(nameOrFile string) (*profile.Profile, error) {
	if strings.ContainsRune(nameOrFile, '/') || strings.HasSuffix(nameOrFile, ".yaml") {
		return profile.Load(nameOrFile)
	}
	data, err := shipped.ReadFile(nameOrFile + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("driver profile %q: no such shipped profile (they are %s; a profile file is named by its path)",
			nameOrFile, strings.Join(Names(), ", "))
	}
	p, err := profile.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver profile %s: %w", nameOrFile, err)
	}
	p.File = path.Join(profile.Dir, nameOrFile+".yaml")
	return p, nil
}
