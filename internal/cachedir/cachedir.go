// Package cachedir names the directory csisim keeps what it builds once
// and reuses across runs: the real components (realkube), the tests'
// shared csisim build (internal/testenv). It is a leaf, so that the
// realkube build command can use it without importing what it builds.
package cachedir

import (
	"os"
	"path/filepath"
)

// Root is ${CSISIM_CACHE:-$HOME/.cache/csisim}, or under the temporary
// directory when there is no home.
func Root() string {
	if base := os.Getenv("CSISIM_CACHE"); base != "" {
		return base
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "csisim")
}
