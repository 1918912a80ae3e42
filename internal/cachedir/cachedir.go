// Package cachedir names the directory csisim keeps what it builds once
// and reuses across runs: the real components (realkube), the tests'
// shared csisim build (internal/testenv). It is a leaf, so that the
// realkube build command can use it without importing what it builds.
package cachedir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
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

// ModuleKey names the Go module of the working directory by a hash of its
// go.mod's path (GoMod), for what is cached per checkout: two checkouts of
// one module on a machine get two keys.
func ModuleKey() (string, error) {
	gomod, err := GoMod()
	if err != nil {
		return "", err
	}
	return KeyOf(gomod), nil
}

// KeyOf is the key ModuleKey gives the module whose go.mod is at this path.
func KeyOf(gomod string) string {
	sum := sha256.Sum256([]byte(gomod))
	return hex.EncodeToString(sum[:8])
}

// GoMod is the path of the working directory's go.mod (go env GOMOD).
func GoMod() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	return string(bytes.TrimSpace(out)), nil
}
