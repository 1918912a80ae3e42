package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readArchive reads a docker archive back: its manifest and every file by
// name, failing on a file written twice.
func readArchive(t *testing.T, path string) ([]manifestEntry, map[string][]byte, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	var order []string
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if _, dup := files[hdr.Name]; dup {
			t.Fatalf("%s is in the archive twice", hdr.Name)
		}
		if files[hdr.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	var m []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	return m, files, order
}

type layerEntry struct {
	Name     string
	Type     byte
	Mode     int64
	Uid, Gid int
	ModTime  time.Time
	Data     string
}

func readLayer(t *testing.T, layer []byte) []layerEntry {
	t.Helper()
	var out []layerEntry
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, layerEntry{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime.UTC(), string(data)})
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o750); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "conf")
	if err := os.WriteFile(conf, []byte("x=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pause := Image{Tag: "csisim.local/pause:v1", Entrypoint: []string{"/csisim-workload", "pause"}, Files: map[string]string{"/csisim-workload": bin}}
	work := Image{Tag: "csisim.local/workload:v1", Entrypoint: []string{"/csisim-workload", "run"}, Files: map[string]string{"/csisim-workload": bin}}
	// Same files and entrypoint as work: the same image under a second tag.
	alias := Image{Tag: "csisim.local/workload:latest", Entrypoint: work.Entrypoint, Files: work.Files}
	deep := Image{Tag: "localhost:5000/deep:1", Entrypoint: []string{"/usr/bin/tool"}, Files: map[string]string{
		"/usr/bin/tool":    bin,
		"/usr/bin-x":       conf, // sorts after /usr/bin/ as a path, before it as a string
		"/etc/tool/a.conf": conf,
	}}
	path := filepath.Join(dir, "images.tar")
	if err := WriteArchive(path, pause, work, alias, deep); err != nil {
		t.Fatal(err)
	}
	m, files, order := readArchive(t, path)

	if len(m) != 3 {
		t.Fatalf("manifest has %d entries, want 3 (pause, workload with two tags, deep): %+v", len(m), m)
	}
	wantTags := [][]string{{pause.Tag}, {work.Tag, alias.Tag}, {deep.Tag}}
	wantEntrypoints := [][]string{pause.Entrypoint, work.Entrypoint, deep.Entrypoint}
	var layers []string
	for i, e := range m {
		if !slices.Equal(e.RepoTags, wantTags[i]) {
			t.Errorf("entry %d: RepoTags %q, want %q", i, e.RepoTags, wantTags[i])
		}
		raw, ok := files[e.Config]
		if !ok {
			t.Fatalf("entry %d: config %s is not in the archive", i, e.Config)
		}
		if want := strings.TrimPrefix(sha(raw), "sha256:") + ".json"; e.Config != want {
			t.Errorf("entry %d: config named %s, its digest gives %s", i, e.Config, want)
		}
		var c config
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("entry %d: config: %v", i, err)
		}
		if c.Architecture != "amd64" || c.OS != "linux" || c.RootFS.Type != "layers" || c.Config.WorkingDir != "/" ||
			!slices.Equal(c.Config.Entrypoint, wantEntrypoints[i]) || !slices.Equal(c.Config.Env, []string{defaultPath}) {
			t.Errorf("entry %d: config %s", i, raw)
		}
		if len(e.Layers) != 1 || len(c.RootFS.DiffIDs) != 1 || len(c.History) != 1 {
			t.Fatalf("entry %d: want one layer, one diff_id, one history entry: layers %q, config %s", i, e.Layers, raw)
		}
		layer, ok := files[e.Layers[0]]
		if !ok {
			t.Fatalf("entry %d: layer %s is not in the archive", i, e.Layers[0])
		}
		if got := sha(layer); got != c.RootFS.DiffIDs[0] {
			t.Errorf("entry %d: layer's sha256 %s, diff_id %s", i, got, c.RootFS.DiffIDs[0])
		}
		layers = append(layers, e.Layers[0])
	}
	if layers[0] != layers[1] {
		t.Errorf("pause and workload hold the same files but have layers %s and %s", layers[0], layers[1])
	}
	if n := len(files); n != 6 { // 2 layers, 3 configs, manifest.json
		t.Errorf("archive holds %d files, want 6 (one layer written once for two images): %q", n, order)
	}
	if order[len(order)-1] != "manifest.json" {
		t.Errorf("archive order %q: want manifest.json last", order)
	}

	root := func(name string, typ byte, mode int64, data string) layerEntry {
		return layerEntry{name, typ, mode, 0, 0, time.Unix(0, 0).UTC(), data}
	}
	if got, want := readLayer(t, files[layers[0]]), []layerEntry{root("csisim-workload", tar.TypeReg, 0o750, "#!binary")}; !slices.Equal(got, want) {
		t.Errorf("pause layer\n%+v\nwant\n%+v", got, want)
	}
	want := []layerEntry{
		root("etc/", tar.TypeDir, 0o755, ""),
		root("etc/tool/", tar.TypeDir, 0o755, ""),
		root("etc/tool/a.conf", tar.TypeReg, 0o600, "x=1\n"),
		root("usr/", tar.TypeDir, 0o755, ""),
		root("usr/bin/", tar.TypeDir, 0o755, ""),
		root("usr/bin/tool", tar.TypeReg, 0o750, "#!binary"),
		root("usr/bin-x", tar.TypeReg, 0o600, "x=1\n"),
	}
	if got := readLayer(t, files[layers[2]]); !slices.Equal(got, want) {
		t.Errorf("deep layer\n%+v\nwant\n%+v", got, want)
	}

	// The same images give the same bytes: image IDs do not change
	// from run to run.
	again := filepath.Join(dir, "again.tar")
	if err := WriteArchive(again, pause, work, alias, deep); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("writing the same images twice gave different archives")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

func TestWriteArchiveRefuses(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := map[string]string{"/bin": bin}
	for _, tc := range []struct {
		name   string
		images []Image
		want   string
	}{
		{"no images", nil, "no images"},
		{"no tag", []Image{{Files: ok}}, "no tag"},
		{"tag without version", []Image{{Tag: "csisim.local/workload", Files: ok}}, "want NAME:TAG"},
		{"registry port only", []Image{{Tag: "localhost:5000/workload", Files: ok}}, "want NAME:TAG"},
		{"empty version", []Image{{Tag: "workload:", Files: ok}}, "want NAME:TAG"},
		{"digest", []Image{{Tag: "w:v1@sha256:00", Files: ok}}, "without digest"},
		{"tag twice", []Image{{Tag: "w:v1", Files: ok}, {Tag: "w:v1", Files: ok}}, "tag given twice"},
		{"no files", []Image{{Tag: "w:v1"}}, "at least one"},
		{"relative path", []Image{{Tag: "w:v1", Files: map[string]string{"bin": bin}}}, "absolute, clean"},
		{"unclean path", []Image{{Tag: "w:v1", Files: map[string]string{"/a/../bin": bin}}}, "absolute, clean"},
		{"root", []Image{{Tag: "w:v1", Files: map[string]string{"/": bin}}}, "absolute, clean"},
		{"file and directory", []Image{{Tag: "w:v1", Files: map[string]string{"/a": bin, "/a/b": bin}}}, "file and the directory"},
		{"missing host file", []Image{{Tag: "w:v1", Files: map[string]string{"/bin": filepath.Join(dir, "nope")}}}, "no such file"},
		{"host directory", []Image{{Tag: "w:v1", Files: map[string]string{"/bin": dir}}}, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "out.tar")
			err := WriteArchive(path, tc.images...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("an archive was written despite the error (%v)", err)
			}
		})
	}
}

// TestWriteArchiveLayers: layer tarballs on disk go below the layer of the
// files, bottom first, copied as they are, named and listed by their
// digest; an image of layers alone has no layer of files; the config
// carries the extra environment and the stop signal.
func TestWriteArchiveLayers(t *testing.T) {
	dir := t.TempDir()
	var layerFiles [][]byte
	var paths []string
	for i, name := range []string{"etc/os-release", "usr/bin/sh"} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		data := []byte(strings.Repeat("x", i+1))
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name[:3]+".tar")
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		layerFiles, paths = append(layerFiles, b.Bytes()), append(paths, p)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	withFiles := Image{Tag: "csisim.local/tool:v1", Entrypoint: []string{"/tool"}, Layers: paths, Files: map[string]string{"/tool": bin},
		Env: []string{"container=docker"}, StopSignal: "SIGRTMIN+3"}
	layersOnly := Image{Tag: "csisim.local/base:v1", Entrypoint: []string{"/usr/bin/sh"}, Layers: paths[:1]}
	path := filepath.Join(dir, "images.tar")
	if err := WriteArchive(path, withFiles, layersOnly); err != nil {
		t.Fatal(err)
	}
	m, files, _ := readArchive(t, path)
	if len(m) != 2 {
		t.Fatalf("manifest has %d entries, want 2: %+v", len(m), m)
	}
	for i, want := range [][][]byte{layerFiles, layerFiles[:1]} {
		e := m[i]
		layers := e.Layers
		if i == 0 {
			if len(layers) != 3 {
				t.Fatalf("%s: %d layers, want the two files' and the files' own: %q", e.RepoTags, len(layers), layers)
			}
			if got := readLayer(t, files[layers[2]]); len(got) != 1 || got[0].Name != "tool" {
				t.Errorf("%s: top layer %+v, want the file tool", e.RepoTags, got)
			}
			layers = layers[:2]
		}
		if len(layers) != len(want) {
			t.Fatalf("%s: layers %q, want %d from files", e.RepoTags, e.Layers, len(want))
		}
		var cfg config
		if err := json.Unmarshal(files[e.Config], &cfg); err != nil {
			t.Fatal(err)
		}
		for j, w := range want {
			if !bytes.Equal(files[layers[j]], w) {
				t.Errorf("%s: layer %d is not the bytes of %s", e.RepoTags, j, paths[j])
			}
			if layers[j] != strings.TrimPrefix(sha(w), "sha256:")+"/layer.tar" || cfg.RootFS.DiffIDs[j] != sha(w) {
				t.Errorf("%s: layer %d named %s with diff ID %s, want both from %s", e.RepoTags, j, layers[j], cfg.RootFS.DiffIDs[j], sha(w))
			}
		}
		if len(cfg.History) != len(e.Layers) {
			t.Errorf("%s: %d history entries for %d layers", e.RepoTags, len(cfg.History), len(e.Layers))
		}
	}
	var cfg config
	if err := json.Unmarshal(files[m[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Env, []string{defaultPath, "container=docker"}) || cfg.Config.StopSignal != "SIGRTMIN+3" {
		t.Errorf("config env %q, stop signal %q; want PATH and container=docker, SIGRTMIN+3", cfg.Config.Env, cfg.Config.StopSignal)
	}
}
