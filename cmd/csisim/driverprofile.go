package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
)

// loadProfile reads the driver profile --driver names: a file (a name with
// a slash or ending in .yaml), or the name of a profile csisim ships
// (csisim, mock, …), which is built into the binary.
func loadProfile(nameOrFile string) (*profile.Profile, error) {
	if strings.ContainsRune(nameOrFile, '/') || strings.HasSuffix(nameOrFile, ".yaml") {
		return profile.Load(nameOrFile)
	}
	return profiles.Get(nameOrFile)
}

// buildDriver builds the driver binary of a profile with start.build into
// dir and returns its path, for {built} in the profile's commands; "" if
// the profile builds nothing. A package with a version (path@v1.2.3) is
// built with `go install` (GOBIN=dir), as `go build` takes no version;
// one without, with `go build` in the current module.
func buildDriver(ctx context.Context, p *profile.Profile, dir string) (string, error) {
	pkg := p.Start.Build
	if pkg == "" {
		return "", nil
	}
	name, _, _ := strings.Cut(path.Base(pkg), "@")
	out := filepath.Join(dir, name)
	var cmd *exec.Cmd
	if strings.Contains(pkg, "@") {
		cmd = exec.CommandContext(ctx, "go", "install", pkg)
		cmd.Env = append(os.Environ(), "GOBIN="+dir)
	} else {
		cmd = exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the driver (start.build %s): %w\n%s", pkg, err, output)
	}
	if _, err := os.Stat(out); err != nil {
		return "", fmt.Errorf("building the driver (start.build %s): no binary %s after the build: %w", pkg, out, errors.Unwrap(err))
	}
	return out, nil
}
