// Package manifests reads a CSI driver's own deployment manifests (what
// `csisim run --deploy` applies): plain multi-document YAML, one file or
// every .yaml, .yml and .json file of a directory in name order. It finds
// the driver's node plugin — the DaemonSet (or StatefulSet, as
// csi-driver-host-path runs its whole driver in one) whose pods run a
// node-driver-registrar — and, in it, the driver's container: the one
// beside the registrar on the volume of the registrar's --csi-address,
// that is no known sidecar. It maps that container's image to a local
// command by the driver profile's images: key, and says which parts of the
// manifests csisim acts on and which it does not (Honoured, NotHonoured).
// The package only reads; the cluster applies the objects.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is one document of the manifests.
type Object struct {
	// Source is file#document (from 1), for messages.
	Source string
	Obj    *unstructured.Unstructured
}

// Set is a driver's deployment as its manifests describe it.
type Set struct {
	// Path is what was loaded: a file or a directory.
	Path    string
	Objects []Object
	// Node is the node plugin: its DaemonSet and containers.
	Node NodePlugin
	// Sidecars are the known sidecar containers of every workload, with
	// their flags parsed as their binaries parse them (sidecars.go).
	Sidecars []Sidecar
}

// NodePlugin is the driver's node DaemonSet (or StatefulSet) and what
// csisim reads of it.
type NodePlugin struct {
	// Kind is DaemonSet or StatefulSet; Namespace and Name the workload's.
	Kind, Namespace, Name string
	Source                string
	// Registrar and Driver are the names of the node-driver-registrar's
	// container and the driver's.
	Registrar, Driver string
	// Image is the driver container's image.
	Image string
	// CSIAddress and RegistrationPath are the registrar's --csi-address
	// and --kubelet-registration-path.
	CSIAddress, RegistrationPath string
	// Unregistered says why the kubelet never registers the driver the
	// registrar hands it (its flags: registrationProblem), "" if it can.
	Unregistered string
}

// Key is the workload's namespace/name.
func (n NodePlugin) Key() string { return n.Namespace + "/" + n.Name }

// Workload is the workload's kind and namespace/name.
func (n NodePlugin) Workload() string { return n.Kind + " " + n.Key() }

// Load reads the manifests at path and finds the node plugin; a set
// without a DaemonSet running a node-driver-registrar, or whose driver
// container cannot be told, is an error.
func Load(path string) (*Set, error) {
	files, err := filesOf(path)
	if err != nil {
		return nil, err
	}
	s := &Set{Path: path}
	for _, f := range files {
		objs, err := readFile(f)
		if err != nil {
			return nil, err
		}
		s.Objects = append(s.Objects, objs...)
	}
	if len(s.Objects) == 0 {
		return nil, fmt.Errorf("deploy %s: no objects", path)
	}
	if err := s.findNodePlugin(); err != nil {
		return nil, fmt.Errorf("deploy %s: %w", path, err)
	}
	s.findSidecars()
	return s, nil
}

// filesOf is path itself, or the manifest files of the directory path in
// name order (not its subdirectories, as kubectl apply -f DIR).
func filesOf(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	var out []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			out = append(out, filepath.Join(path, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("deploy %s: no .yaml, .yml or .json file in the directory", path)
	}
	return out, nil // os.ReadDir sorts by name
}

// readFile decodes every non-empty document of a file.
func readFile(file string) ([]Object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for doc := 1; ; doc++ {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("deploy %s#%d: %w", file, doc, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		src := fmt.Sprintf("%s#%d", file, doc)
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("deploy %s: a document without apiVersion and kind", src)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("deploy %s: %s without metadata.name", src, u.GetKind())
		}
		out = append(out, Object{Source: src, Obj: u})
	}
}

// findNodePlugin picks the DaemonSet or StatefulSet whose pods run a
// node-driver-registrar, and its driver container.
func (s *Set) findNodePlugin() error {
	var found []NodePlugin
	for _, o := range s.Objects {
		kind := o.Obj.GetKind()
		if kind != "DaemonSet" && kind != "StatefulSet" || !strings.HasPrefix(o.Obj.GetAPIVersion(), "apps/") {
			continue
		}
		template, ok := podTemplate(o)
		if !ok {
			return fmt.Errorf("%s: %s %s is not a valid %s", o.Source, kind, o.Obj.GetName(), kind)
		}
		np, ok, err := nodePluginOf(&template.Spec, o.Obj.GetNamespace())
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", o.Source, kind, o.Obj.GetName(), err)
		}
		if ok {
			np.Kind, np.Namespace, np.Name, np.Source = kind, o.Obj.GetNamespace(), o.Obj.GetName(), o.Source
			found = append(found, np)
		}
	}
	switch len(found) {
	case 0:
		return errors.New("no DaemonSet or StatefulSet runs a node-driver-registrar container: csisim cannot tell the driver's node plugin")
	case 1:
		s.Node = found[0]
		return nil
	}
	return fmt.Errorf("%d workloads run a node-driver-registrar (%s, %s): csisim deploys one driver", len(found),
		found[0].Workload(), found[1].Workload())
}

// nodePluginOf finds the registrar and the driver container of a node
// plugin's pod spec; ok false if it runs no registrar.
func nodePluginOf(spec *corev1.PodSpec, namespace string) (np NodePlugin, ok bool, err error) {
	var reg *corev1.Container
	for i := range spec.Containers {
		if sidecarOf(spec.Containers[i].Image) == "csi-node-driver-registrar" {
			reg = &spec.Containers[i]
			break
		}
	}
	if reg == nil {
		return np, false, nil
	}
	np = NodePlugin{Registrar: reg.Name}
	flags := registrarFlags(reg, namespace)
	// Refused args (flags.Err) leave the values parsed before the refused
	// one, and the defaults: enough to tell the driver container.
	np.CSIAddress, np.RegistrationPath = flags.Value("csi-address"), flags.Value("kubelet-registration-path")
	vol := volumeAt(reg, strings.TrimPrefix(np.CSIAddress, "unix://"))
	if vol == "" {
		return np, true, fmt.Errorf("container %s: no volume mount holds its --csi-address %s", reg.Name, np.CSIAddress)
	}
	var drivers []string
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Name == reg.Name || sidecarOf(c.Image) != "" || !mounts(c, vol) {
			continue
		}
		drivers = append(drivers, c.Name)
		np.Driver, np.Image = c.Name, c.Image
	}
	np.Unregistered = Unregistered(spec, namespace)
	switch len(drivers) {
	case 0:
		return np, true, fmt.Errorf("no container but sidecars mounts volume %s, the registrar's socket directory: where is the driver?", vol)
	case 1:
		return np, true, nil
	}
	return np, true, fmt.Errorf("containers %s all mount volume %s beside the registrar: csisim cannot tell which is the driver",
		strings.Join(drivers, ", "), vol)
}

// knownSidecars are the kubernetes-csi sidecars by image name.
var knownSidecars = []string{"csi-node-driver-registrar", "livenessprobe", "csi-provisioner", "csi-attacher", "csi-resizer",
	"csi-snapshotter", "csi-external-health-monitor-controller", "snapshot-controller"}

// sidecarOf is the known sidecar an image is (its last path element
// without tag or digest), or "".
func sidecarOf(image string) string {
	name := Repository(image)
	name = name[strings.LastIndex(name, "/")+1:]
	if slices.Contains(knownSidecars, name) {
		return name
	}
	return ""
}

// Repository is an image reference without its tag and digest.
func Repository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// volumeAt is the volume c mounts at the directory holding socket.
func volumeAt(c *corev1.Container, socket string) string {
	dir := filepath.Dir(socket)
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == dir {
			return m.Name
		}
	}
	return ""
}

func mounts(c *corev1.Container, vol string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol })
}

// Command is the local command the images map gives the driver's image:
// the entry of its full reference, else of its repository. An image the
// map lacks is an error naming it and the profile.
func (n NodePlugin) Command(images map[string]string, profile string) (string, error) {
	if c, ok := images[n.Image]; ok {
		return c, nil
	}
	if c, ok := images[Repository(n.Image)]; ok {
		return c, nil
	}
	known := make([]string, 0, len(images))
	for k := range images {
		known = append(known, k)
	}
	slices.Sort(known)
	return "", fmt.Errorf("deploy: the node plugin's image %s (container %s of %s) is not in the images: of driver profile %s "+
		"(it maps %s); add `images: {%q: <local command>}` to the profile", n.Image, n.Driver, n.Workload(), profile,
		orNone(known), Repository(n.Image))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no image"
	}
	return strings.Join(s, ", ")
}
