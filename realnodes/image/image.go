// Package image writes the container images of csisim's real nodes. Those
// nodes run a real kubelet and containerd but reach no registry, so their
// images are made here, from files on this machine, as one docker-archive
// tarball (the format of `docker save`) that
//
//	ctr -n k8s.io images import --platform linux/amd64 FILE
//
// loads into containerd's image store, where the kubelet finds them by tag.
// An image is one uncompressed layer holding the given files and their
// parent directories, and a config naming the entrypoint; nothing else
// (no shell, no /etc) unless layer tarballs made elsewhere go below it
// (Image.Layers: a root file system, for e2e/kind's images). runc creates
// the mount points the kubelet and
// containerd mount over (/proc, /dev, /etc/hosts, /dev/termination-log,
// volumes) itself, before it makes a read-only root filesystem read-only
// (containerd_test.go runs such containers).
//
// Archives are deterministic: the same images from files with the same
// contents and modes give the same bytes, so image IDs stay the same from
// run to run.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Image is one image of an archive.
type Image struct {
	Tag        string // full reference, e.g. "csisim.local/workload:v1"
	Entrypoint []string
	Files      map[string]string // path in the image ("/csisim-workload") -> host file to copy (mode kept, owner root)
	// Layers are layer tarballs on disk (uncompressed tar, as a root file
	// system is packed), bottom first, below the layer of Files; with
	// Layers, Files may be empty. They are read when the archive is
	// written, not held in memory, so a layer may be a whole distribution.
	Layers []string
	// Env is added to the image's environment, after PATH.
	Env []string
	// StopSignal is the signal `docker stop` sends, e.g. "SIGRTMIN+3"
	// for an image whose entrypoint ends in systemd; empty: SIGTERM.
	StopSignal string
}

// epoch is every timestamp in an archive: the layer's files, the config's
// created date. A fixed one keeps archives byte-for-byte reproducible.
var epoch = time.Unix(0, 0).UTC()

// defaultPath is the PATH of every image, the one Docker and containerd
// give a container whose image sets none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// WriteArchive writes one docker-archive tarball holding all images (layers with identical content written once).
func WriteArchive(path string, images ...Image) error {
	if len(images) == 0 {
		return errors.New("writing image archive: no images")
	}
	a := archive{blobs: map[string][]byte{}, files: map[string]string{}}
	tags := map[string]bool{}
	for _, img := range images {
		if err := checkTag(img.Tag); err != nil {
			return fmt.Errorf("image %q: %w", img.Tag, err)
		}
		if tags[img.Tag] {
			return fmt.Errorf("image %q: tag given twice", img.Tag)
		}
		tags[img.Tag] = true
		if err := a.add(img); err != nil {
			return fmt.Errorf("image %s: %w", img.Tag, err)
		}
	}
	if err := a.write(path); err != nil {
		return fmt.Errorf("writing image archive %s: %w", path, err)
	}
	return nil
}

// checkTag accepts what containerd can import and the kubelet can ask for
// by name: NAME:TAG, without a digest. The tag is required because an
// archive's RepoTags without one would be taken for ":latest" by some
// tools and refused by others.
func checkTag(ref string) error {
	slash := strings.LastIndexByte(ref, '/')
	colon := strings.LastIndexByte(ref, ':')
	switch {
	case ref == "":
		return errors.New("no tag")
	case strings.ContainsAny(ref, "@ \t\n"):
		return errors.New("want NAME:TAG without digest or spaces")
	case colon < slash+2 || colon == len(ref)-1:
		return errors.New("want NAME:TAG, e.g. csisim.local/workload:v1")
	}
	return nil
}

// archive collects the archive's contents before it is written: blobs by
// file name in the archive, and the manifest. Blobs are named by their
// digest, so a layer or config two images share is stored once.
type archive struct {
	blobs    map[string][]byte
	files    map[string]string // blobs that are layer files on disk, by name
	manifest []manifestEntry
}

// manifestEntry is one entry of manifest.json, the index of a docker
// archive: an image's config, its tags and its layers, bottom first.
type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// config is the image config, Docker's (media type
// application/vnd.docker.container.image.v1+json), whose fields OCI's image
// config took over: only those containerd and the kubelet read.
type config struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      time.Time       `json:"created"`
	Config       containerConfig `json:"config"`
	RootFS       rootFS          `json:"rootfs"`
	History      []history       `json:"history"`
}

type containerConfig struct {
	Env        []string `json:"Env"`
	Entrypoint []string `json:"Entrypoint"`
	Cmd        []string `json:"Cmd"`
	WorkingDir string   `json:"WorkingDir"`
	StopSignal string   `json:"StopSignal,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type history struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by"`
}

func (a *archive) add(img Image) error {
	var diffIDs, layerNames []string
	var hist []history
	for _, file := range img.Layers {
		diffID, err := fileDigest(file)
		if err != nil {
			return fmt.Errorf("layer %s: %w", file, err)
		}
		name := hexOf(diffID) + "/layer.tar"
		a.files[name] = file
		diffIDs, layerNames = append(diffIDs, diffID), append(layerNames, name)
		hist = append(hist, history{Created: epoch, CreatedBy: "csisim realnodes/image: " + filepath.Base(file)})
	}
	if len(img.Files) > 0 || len(img.Layers) == 0 {
		layer, err := layerTar(img.Files)
		if err != nil {
			return err
		}
		diffID := digest(layer)
		name := hexOf(diffID) + "/layer.tar"
		a.blobs[name] = layer
		diffIDs, layerNames = append(diffIDs, diffID), append(layerNames, name)
		hist = append(hist, history{Created: epoch, CreatedBy: "csisim realnodes/image"})
	}

	cfg, err := json.Marshal(config{
		Architecture: "amd64",
		OS:           "linux",
		Created:      epoch,
		Config: containerConfig{
			Env:        append([]string{defaultPath}, img.Env...),
			Entrypoint: img.Entrypoint,
			WorkingDir: "/",
			StopSignal: img.StopSignal,
		},
		RootFS: rootFS{Type: "layers", DiffIDs: diffIDs},
		// One entry per layer: tools that pair history with layers
		// (docker history, some scanners) find them matched.
		History: hist,
	})
	if err != nil {
		return fmt.Errorf("encoding config: %w", err)
	}
	cfgName := hexOf(digest(cfg)) + ".json"
	// Images that differ in their tag only are one image (one ID) with
	// two tags, as docker save writes them.
	for i := range a.manifest {
		if a.manifest[i].Config == cfgName {
			a.manifest[i].RepoTags = append(a.manifest[i].RepoTags, img.Tag)
			return nil
		}
	}
	a.blobs[cfgName] = cfg
	a.manifest = append(a.manifest, manifestEntry{Config: cfgName, RepoTags: []string{img.Tag}, Layers: layerNames})
	return nil
}

// fileDigest is the digest of a file's contents, read as a stream.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// layerTar is the layer of an image with files: every file and every
// parent directory, in path order (a directory before what it holds), all
// owned by root and dated epoch. The files' contents are read whole: these
// images hold a static binary or two.
func layerTar(files map[string]string) ([]byte, error) {
	if len(files) == 0 {
		return nil, errors.New("no files: an image needs at least one")
	}
	type entry struct {
		name string // in the tar: relative, no leading slash
		host string // "" for a directory
	}
	var entries []entry
	dirs := map[string]bool{}
	for p, host := range files {
		clean := path.Clean("/" + p)
		if !path.IsAbs(p) || clean != p || clean == "/" {
			return nil, fmt.Errorf("path %q in the image: want an absolute, clean file path", p)
		}
		entries = append(entries, entry{name: clean[1:], host: host})
		for d := path.Dir(clean); d != "/"; d = path.Dir(d) {
			dirs[d[1:]] = true
		}
	}
	for d := range dirs {
		if _, ok := files["/"+d]; ok {
			return nil, fmt.Errorf("path /%s in the image is a file and the directory of another", d)
		}
		entries = append(entries, entry{name: d})
	}
	// Sorting the names as paths (by components) puts each directory
	// right before its contents, whatever characters follow: "a/b" before
	// "a-c", unlike a plain string sort.
	slices.SortFunc(entries, func(x, y entry) int {
		return slices.Compare(strings.Split(x.name, "/"), strings.Split(y.name, "/"))
	})

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, ModTime: epoch, Format: tar.FormatPAX}
		var data []byte
		if e.host == "" {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, e.name+"/", 0o755
		} else {
			fi, err := os.Stat(e.host)
			if err != nil {
				return nil, fmt.Errorf("file /%s: %w", e.name, err)
			}
			if !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("file /%s: %s is not a regular file", e.name, e.host)
			}
			if data, err = os.ReadFile(e.host); err != nil {
				return nil, fmt.Errorf("file /%s: %w", e.name, err)
			}
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, int64(len(data)), int64(fi.Mode().Perm())
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry /%s: %w", e.name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("layer entry /%s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer: %w", err)
	}
	return buf.Bytes(), nil
}

// write writes the archive to a temporary file beside path and renames it
// into place, so that an importer never reads half an archive.
func (a *archive) write(dest string) error {
	f, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, nothing is left to remove
	manifest, err := json.Marshal(a.manifest)
	if err != nil {
		f.Close()
		return fmt.Errorf("encoding manifest: %w", err)
	}
	if err := a.writeTar(f, manifest); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), dest)
}

// writeTar writes the blobs in name order (with the directories of the
// layers), then manifest.json, as docker save lays an archive out.
func (a *archive) writeTar(w io.Writer, manifest []byte) error {
	tw := tar.NewWriter(w)
	names := make([]string, 0, len(a.blobs)+len(a.files))
	for n := range a.blobs {
		names = append(names, n)
	}
	for n := range a.files {
		if _, ok := a.blobs[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	dirs := map[string]bool{}
	file := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, n := range names {
		if d, _, ok := strings.Cut(n, "/"); ok && !dirs[d] {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
		}
		if host, ok := a.files[n]; ok && a.blobs[n] == nil {
			if err := copyFile(tw, n, host); err != nil {
				return err
			}
			continue
		}
		if err := file(n, a.blobs[n]); err != nil {
			return err
		}
	}
	if err := file("manifest.json", manifest); err != nil {
		return err
	}
	return tw.Close()
}

// copyFile writes the file host into tw as name, streaming it.
func copyFile(tw *tar.Writer, name, host string) error {
	f, err := os.Open(host)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: fi.Size(), Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("layer %s: %w", host, err)
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func hexOf(digest string) string { return strings.TrimPrefix(digest, "sha256:") }
