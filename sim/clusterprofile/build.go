package clusterprofile

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/csisim/csisim/internal/cachedir"
)

// Build returns the driver binary built from pkg, a Go package as `go
// install` takes it. A versioned one (path@version) is fetched through the
// module proxy and built once, then kept under csisim's cache directory
// (${CSISIM_CACHE:-~/.cache/csisim}/drivers/<path@version>/); an
// unversioned one is built from the module of the working directory (its
// go.mod decides the version) each time, Go's build cache making that
// cheap, and kept there under its path and that module's go.mod, so that
// two checkouts building the same package at once each run their own.
func Build(ctx context.Context, pkg string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	path, version, versioned := strings.Cut(pkg, "@")
	if path == "" || (versioned && version == "") {
		return "", fmt.Errorf("start.build %q: want a Go package path, optionally with @version", pkg)
	}
	base := filepath.Join(cachedir.Root(), "drivers")
	key := cacheKey(pkg)
	if !versioned {
		mod, err := cachedir.ModuleKey()
		if err != nil {
			return "", fmt.Errorf("building %s: %w", pkg, err)
		}
		key += "@module-" + mod
	}
	dir := filepath.Join(base, key)
	if versioned {
		if bin, ok := builtBinary(dir); ok {
			return bin, nil
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	// Built into a directory of its own and renamed into place, so that
	// runs building the same driver at once never see half a binary.
	tmp, err := os.MkdirTemp(base, ".build-")
	if err != nil {
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "bin")
	if versioned {
		// `go install path@version` would do, but it also asks the proxy
		// for the module's version list (for deprecation notices), which
		// proxies that serve only what is asked for refuse. A throwaway
		// module that requires the package builds the same binary.
		mod := filepath.Join(tmp, "module")
		if err := os.MkdirAll(mod, 0o755); err != nil {
			return "", fmt.Errorf("building %s: %w", pkg, err)
		}
		if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module csisim.local/driverbuild\n"), 0o644); err != nil {
			return "", fmt.Errorf("building %s: %w", pkg, err)
		}
		if err := goCommand(ctx, mod, log, "get", pkg); err != nil {
			return "", fmt.Errorf("building %s: %w", pkg, err)
		}
		if err := goCommand(ctx, mod, log, "build", "-o", out+"/", path); err != nil {
			return "", fmt.Errorf("building %s: %w", pkg, err)
		}
	} else if err := goCommand(ctx, "", log, "build", "-o", out+"/", pkg); err != nil {
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	if _, ok := builtBinary(out); !ok {
		return "", fmt.Errorf("building %s: go build made no single binary (is it a main package?)", pkg)
	}
	_ = os.RemoveAll(dir) // an unversioned build's previous binary
	if err := os.Rename(out, dir); err != nil {
		// Another run renamed its build into place first: use that.
		if bin, ok := builtBinary(dir); ok {
			return bin, nil
		}
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	bin, _ := builtBinary(dir)
	return bin, nil
}

// goCommand runs the go command in dir ("" for the working directory),
// outside any workspace, with its output in log and, on failure, in the
// error.
func goCommand(ctx context.Context, dir string, log io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out strings.Builder
	cmd.Stdout = io.MultiWriter(log, &out)
	cmd.Stderr = io.MultiWriter(log, &out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// cacheKey is the directory name a package's binary is kept under.
func cacheKey(pkg string) string {
	return strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(pkg)
}

// builtBinary is the one executable in dir, if there is exactly one.
func builtBinary(dir string) (string, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].IsDir() {
		return "", false
	}
	return filepath.Join(dir, entries[0].Name()), true
}
