// Command imagegen writes one container image as a docker-archive tarball
// (package realnodes/image), for e2e/kind/prepare.sh and run.sh: the kind
// backend's images are made here from binaries and root file systems on
// this machine, without a registry or a Dockerfile build.
//
//	go run ./e2e/kind/imagegen --out FILE --tag NAME:TAG [--tag ...]
//	    [--entrypoint "PROGRAM ARG..."] [--layer ROOTFS.tar ...]
//	    [--file /PATH/IN/IMAGE=HOST_FILE ...] [--dir /PATH/IN/IMAGE=HOST_DIR ...]
//	    [--env K=V ...] [--stop-signal SIG]
//
// Every --tag names the same image. --layer adds a layer tarball, bottom
// first, below the layer of the --file files and the regular files below
// each --dir (symbolic links and other special files are refused).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/csisim/csisim/realnodes/image"
)

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	out, imgs, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "imagegen: %v\n", err)
		return 2
	}
	if err := image.WriteArchive(out, imgs...); err != nil {
		fmt.Fprintf(stderr, "imagegen: %v\n", err)
		return 1
	}
	return 0
}

// parse turns the command line into the archive's path and its images:
// one per tag, all alike (WriteArchive stores them as one image).
func parse(args []string) (string, []image.Image, error) {
	fs := flag.NewFlagSet("imagegen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		out, entrypoint, stopSignal string
		tags, layers, files, dirs   list
		env                         list
	)
	fs.StringVar(&out, "out", "", "the archive to write")
	fs.StringVar(&entrypoint, "entrypoint", "", "the entrypoint, words separated by spaces")
	fs.StringVar(&stopSignal, "stop-signal", "", "the image's stop signal")
	fs.Var(&tags, "tag", "a full image reference (repeatable)")
	fs.Var(&layers, "layer", "a layer tarball, bottom first (repeatable)")
	fs.Var(&files, "file", "/path/in/image=host-file (repeatable)")
	fs.Var(&dirs, "dir", "/path/in/image=host-dir: every file below host-dir (repeatable)")
	fs.Var(&env, "env", "K=V added to the environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	switch {
	case fs.NArg() > 0:
		return "", nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case out == "":
		return "", nil, errors.New("--out is required")
	case len(tags) == 0:
		return "", nil, errors.New("--tag is required")
	}
	img := image.Image{Entrypoint: strings.Fields(entrypoint), Layers: layers, Env: env, StopSignal: stopSignal}
	if len(files)+len(dirs) > 0 {
		img.Files = map[string]string{}
	}
	for _, f := range files {
		inImage, host, ok := strings.Cut(f, "=")
		if !ok || inImage == "" || host == "" {
			return "", nil, fmt.Errorf("--file %q: want /path/in/image=host-file", f)
		}
		img.Files[inImage] = host
	}
	for _, d := range dirs {
		inImage, host, ok := strings.Cut(d, "=")
		if !ok || inImage == "" || host == "" {
			return "", nil, fmt.Errorf("--dir %q: want /path/in/image=host-dir", d)
		}
		if err := addDir(img.Files, inImage, host); err != nil {
			return "", nil, fmt.Errorf("--dir %q: %w", d, err)
		}
	}
	imgs := make([]image.Image, len(tags))
	for i, t := range tags {
		imgs[i] = img
		imgs[i].Tag = t
	}
	return out, imgs, nil
}

// addDir adds every regular file below host to files, at the same path
// below inImage.
func addDir(files map[string]string, inImage, host string) error {
	return filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(host, p)
		if err != nil {
			return err
		}
		files[path.Join(inImage, filepath.ToSlash(rel))] = p
		return nil
	})
}
