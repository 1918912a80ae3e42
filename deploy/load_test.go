package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
)

// manifest is one object of a manifest file.
type manifest struct {
	file string // relative to this directory
	line int    // where the document starts
	json []byte // the document as JSON
	obj  runtime.Object
}

func (m manifest) String() string {
	acc, _ := meta.Accessor(m.obj)
	return fmt.Sprintf("%s:%d: %s %s", m.file, m.line, m.obj.GetObjectKind().GroupVersionKind().Kind, acc.GetName())
}

func (m manifest) name() string {
	acc, _ := meta.Accessor(m.obj)
	return acc.GetName()
}

func (m manifest) namespace() string {
	acc, _ := meta.Accessor(m.obj)
	return acc.GetNamespace()
}

// decoder decodes the kinds the manifests may hold, strictly: an unknown or
// duplicate field is an error, as it is for `kubectl apply` with
// server-side field validation.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := snapshotv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// loadFile decodes every document of a manifest file.
// loadLibraryDriver reads the scenario library's CSIDriver and
// StorageClass (scenarios/library/manifests/driver.yaml) as a run with
// csisim's own driver profile applies them.
func loadLibraryDriver(t *testing.T) ([]manifest, error) {
	rendered, err := scenarios.RenderManifestFile(filepath.Join("..", "scenarios", "library", "manifests", "driver.yaml"), profiles.MustDefault())
	if err != nil {
		return nil, err
	}
	path := filepath.Join(t.TempDir(), "driver.yaml")
	if err := os.WriteFile(path, rendered, 0o644); err != nil {
		return nil, err
	}
	return loadFile(path)
}

func loadFile(path string) ([]manifest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []manifest
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	line := 1
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		start := line
		line += bytes.Count(doc, []byte("\n"))
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, start, err)
		}
		if string(js) == "null" {
			continue // only comments
		}
		obj, gvk, err := decoder.Decode(js, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, start, err)
		}
		if obj.GetObjectKind().GroupVersionKind().Empty() {
			obj.GetObjectKind().SetGroupVersionKind(*gvk)
		}
		out = append(out, manifest{file: path, line: start, json: js, obj: obj})
	}
	return out, nil
}

// load decodes every manifest file matching pattern, failing the test on
// any error.
func load(t *testing.T, pattern string) []manifest {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests match %s: %v", pattern, err)
	}
	var all []manifest
	for _, f := range files {
		ms, err := loadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
	}
	return all
}

// The sets of manifests: the deployment, the node DaemonSet variant
// without mount propagation, the built-here variant of the workloads, and
// the seed sweep Job (not part of the deployment).
var (
	basePattern      = filepath.Join(ManifestDir, "*.yaml")
	variantPattern   = filepath.Join(ManifestDir, NoMountPropagationVariant, "*.yaml")
	builtHerePattern = filepath.Join(ManifestDir, BuiltHereVariant, "*.yaml")
	seedSweepPattern = filepath.Join(SeedSweepDir, "*.yaml")
)

// only returns the objects of type T in ms.
func only[T runtime.Object](ms []manifest) []T {
	var out []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of type T in ms.
func one[T runtime.Object](t *testing.T, ms []manifest) T {
	t.Helper()
	objs := only[T](ms)
	if len(objs) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want exactly one", len(objs), zero)
	}
	return objs[0]
}

// clusterScoped are the cluster-scoped kinds the manifests use; every other
// kind must be namespaced (and is, for those listed in namespaced).
var (
	clusterScoped = map[string]bool{"Namespace": true, "CSIDriver": true, "StorageClass": true, "VolumeSnapshotClass": true, "ClusterRole": true, "ClusterRoleBinding": true}
	namespaced    = map[string]bool{"ServiceAccount": true, "Role": true, "RoleBinding": true, "Deployment": true, "DaemonSet": true, "Job": true}
)

func container(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

func volume(spec *corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// flagValue returns the value of --name=value in c's args.
func flagValue(c *corev1.Container, name string) (string, bool) {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func hasArg(c *corev1.Container, arg string) bool {
	for _, a := range c.Args {
		if a == arg {
			return true
		}
	}
	return false
}
