package sanityrun

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
)

// specPaths gives each csi-sanity spec target and staging paths of its
// own (csi-sanity's CreateTargetDir and CreateStagingDir hooks), so that a
// mount one spec leaves behind fails no other spec's set-up with "file
// exists", and records what each spec's clean-up could not remove
// (RemoveTargetPath, RemoveStagingPath), whose errors csi-sanity itself
// drops.
type specPaths struct {
	dir string

	mu     sync.Mutex
	n      int                 // specs set up so far
	leaked map[string][]string // spec full text → what it left behind
}

func newSpecPaths(dir string) *specPaths {
	return &specPaths{dir: dir, leaked: map[string][]string{}}
}

// specDir is the directory of the spec being set up.
func (p *specPaths) specDir() string {
	return filepath.Join(p.dir, fmt.Sprintf("spec-%03d", p.n))
}

// target makes a new spec's directory and its target path's parent:
// csi-sanity sets up the target path first.
func (p *specPaths) target(string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	dir := filepath.Join(p.specDir(), "target")
	return dir, os.MkdirAll(dir, 0o750)
}

// staging makes the spec's staging path.
func (p *specPaths) staging(string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dir := filepath.Join(p.specDir(), "staging")
	return dir, os.MkdirAll(dir, 0o750)
}

// remove removes a path csi-sanity made for the spec, as csi-sanity would
// (it must be empty by now), and records what is left if it cannot: a
// mount, or what the driver left in it.
func (p *specPaths) remove(path string) error {
	err := os.Remove(path)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	what := fmt.Sprintf("%s (%v)", path, errors.Unwrap(err))
	if mounts := mountsBelow(path); len(mounts) > 0 {
		what = "a mount at " + strings.Join(mounts, " and at ")
	}
	spec := ginkgo.CurrentSpecReport().FullText()
	p.mu.Lock()
	p.leaked[spec] = append(p.leaked[spec], what)
	p.mu.Unlock()
	return err
}

// kind is what is at path, for csi-sanity's CheckPath (which it asks for
// once the paths are made by hooks, as here): csi-sanity's own way,
// os.Stat.
func (p *specPaths) kind(path string) (sanity.PathKind, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return sanity.PathIsNotFound, nil
	case err != nil:
		return "", err
	case fi.Mode().IsRegular():
		return sanity.PathIsFile, nil
	case fi.IsDir():
		return sanity.PathIsDir, nil
	}
	return sanity.PathIsOther, nil
}

// leftBehind is what the spec's clean-up could not remove.
func (p *specPaths) leftBehind(spec string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaked[spec]
}

// mountsBelow are the mount points at or below dir, from
// /proc/self/mountinfo (its fifth field, with spaces as \040).
func mountsBelow(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}
