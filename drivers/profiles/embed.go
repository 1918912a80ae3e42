// Package profiles holds the driver profiles csisim ships (see package
// drivers/profile), built into the binary so that a program that imports
// csisim as a module — a driver repository's test suite — finds them by
// name without a checkout of csisim.
package profiles

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the shipped profiles by name ("csisim", "mock", ...), sorted.
func Names() []string {
	entries, _ := fs.Glob(files, "*.yaml") // the pattern is valid
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = strings.TrimSuffix(e, ".yaml")
	}
	sort.Strings(names)
	return names
}

// Read returns the shipped profile called name.
func Read(name string) ([]byte, error) {
	data, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("driver profile %q: not a shipped profile; the shipped profiles are %s", name, strings.Join(Names(), ", "))
	}
	return data, nil
}
