package realkube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// The snapshot CRDs come from the same release as the snapshot-controller
// and csi-snapshotter binaries the build produces.
const (
	snapshotClientModule  = "github.com/kubernetes-csi/external-snapshotter/client/v8"
	snapshotClientVersion = "v8.7.0"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// SnapshotCRDDir returns config/crd of external-snapshotter/client/v8 at
// v8.7.0 in the Go module cache, downloading the module through the go
// command if it is not there yet. Nothing upstream is copied into the
// repository.
func SnapshotCRDDir() (string, error) {
	if modCache, err := goEnv("GOMODCACHE"); err == nil && modCache != "" {
		dir := filepath.Join(modCache, escapeModulePath(snapshotClientModule)+"@"+snapshotClientVersion, "config", "crd")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	cmd := exec.Command("go", "mod", "download", "-json", snapshotClientModule+"@"+snapshotClientVersion)
	cmd.Dir = os.TempDir() // outside any module: never touches a go.mod
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var dl struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &dl); jerr == nil && dl.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", snapshotClientModule, snapshotClientVersion, dl.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", snapshotClientModule, snapshotClientVersion, err, strings.TrimSpace(stderr.String()))
	}
	if dl.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory", snapshotClientModule, snapshotClientVersion)
	}
	return filepath.Join(dl.Dir, "config", "crd"), nil
}

func goEnv(key string) (string, error) {
	out, err := exec.Command("go", "env", key).Output()
	return strings.TrimSpace(string(out)), err
}

// escapeModulePath applies the module cache's case encoding (upper-case
// letters become '!' and the lower-case letter).
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// loadCRDs reads every CustomResourceDefinition in the *.yaml files of dir.
func loadCRDs(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range docSep.Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if u.GetKind() == "CustomResourceDefinition" {
				out = append(out, u)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinitions in %s", dir)
	}
	return out, nil
}

// installSnapshotCRDs creates the snapshot CRDs and waits until each is
// Established.
func (c *Cluster) installSnapshotCRDs(ctx context.Context) error {
	dir := c.cfg.SnapshotCRDDir
	if dir == "" {
		var err error
		if dir, err = SnapshotCRDDir(); err != nil {
			return err
		}
	}
	crds, err := loadCRDs(dir)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	res := dc.Resource(crdGVR)
	for _, crd := range crds {
		if _, err := res.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, res, crd.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, res dynamic.NamespaceableResourceInterface, name string) error {
	for {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(u) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("CRD %s not Established", name), err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
