package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// csisim's own deployment, which the node plugin's image csisim:e2e runs.
const ownDeploy = "../../deploy/kubernetes"

func TestLoadFindsTheNodePlugin(t *testing.T) {
	s, err := Load(ownDeploy)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	got := []string{n.Key(), n.Driver, n.Registrar, n.Image, n.CSIAddress, n.RegistrationPath}
	want := []string{"csisim/csisim-node", "csisim-plugin", "node-driver-registrar", "csisim:e2e", "/csi/csi.sock",
		"/var/lib/kubelet/plugins/hostpath.csisim.io/csi.sock"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("node plugin %q, want %q", got, want)
	}
	// Files in name order, documents in file order; subdirectories
	// (variants/) are not part of it.
	if first := s.Objects[0].Obj.GetKind(); first != "Namespace" {
		t.Errorf("first object %s, want the Namespace of 00-namespace.yaml", first)
	}
	for _, o := range s.Objects {
		if strings.Contains(o.Source, "variants") {
			t.Errorf("%s is of a subdirectory", o.Source)
		}
	}
}

func TestCommand(t *testing.T) {
	s, err := Load(ownDeploy)
	if err != nil {
		t.Fatal(err)
	}
	for _, images := range []map[string]string{{"csisim": "{csisim}"}, {"csisim:e2e": "{csisim}"}} {
		if c, err := s.Node.Command(images, "p.yaml"); err != nil || c != "{csisim}" {
			t.Errorf("Command(%v) = %q, %v", images, c, err)
		}
	}
	_, err = s.Node.Command(map[string]string{"registry.k8s.io/sig-storage/hostpathplugin": "hostpathplugin"}, "my-profile.yaml")
	for _, part := range []string{"csisim:e2e", "my-profile.yaml", "registry.k8s.io/sig-storage/hostpathplugin", `"csisim"`} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("unmapped image: error %v, want it to name %s", err, part)
		}
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"csisim:e2e": "csisim", "registry.k8s.io/sig-storage/livenessprobe:v2.19.0": "registry.k8s.io/sig-storage/livenessprobe",
		"localhost:5000/driver": "localhost:5000/driver", "localhost:5000/driver:v1": "localhost:5000/driver",
		"quay.io/d@sha256:abc": "quay.io/d", "plain": "plain",
	} {
		if got := Repository(in); got != want {
			t.Errorf("Repository(%q) = %q, want %q", in, got, want)
		}
	}
}

const nodeDS = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node, namespace: csi}
spec:
  selector: {matchLabels: {app: node}}
  template:
    metadata: {labels: {app: node}}
    spec:
      containers:
        - name: registrar
          image: registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0
          args: [--csi-address=/csi/csi.sock]
          volumeMounts: [{name: socket, mountPath: /csi}]
        - name: liveness
          image: registry.k8s.io/sig-storage/livenessprobe:v2.19.0
          volumeMounts: [{name: socket, mountPath: /csi}]
%s
      volumes: [{name: socket, hostPath: {path: /var/lib/kubelet/plugins/x}}]
`

func TestLoadRefuses(t *testing.T) {
	driver := func(name string) string {
		return "        - name: " + name + "\n          image: example/driver:1\n          volumeMounts: [{name: socket, mountPath: /csi}]"
	}
	tests := []struct {
		name, text, want string
	}{
		{"no registrar", "apiVersion: v1\nkind: Namespace\nmetadata: {name: csi}\n",
			"no DaemonSet or StatefulSet runs a node-driver-registrar container"},
		{"no driver beside the registrar", strings.Replace(nodeDS, "%s", "", 1),
			"no container but sidecars mounts volume socket"},
		{"two drivers", strings.Replace(nodeDS, "%s", driver("a")+"\n"+driver("b"), 1),
			"containers a, b all mount volume socket beside the registrar"},
		{"a document without a kind", "apiVersion: v1\nmetadata: {name: x}\n", "a document without apiVersion and kind"},
		{"bad YAML", "kind: [\n", "deploy "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "d.yaml")
			if err := os.WriteFile(file, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load: %v, want an error with %q", err, tt.want)
			}
		})
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no .yaml, .yml or .json file") {
		t.Errorf("an empty directory: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing path loaded")
	}
}

func TestContainersNamesWhatIsNotHonoured(t *testing.T) {
	s, err := Load(ownDeploy)
	if err != nil {
		t.Fatal(err)
	}
	honoured, not := s.Containers("{csisim}")
	all := strings.Join(not, "\n")
	for _, part := range []string{"Deployment csisim/csisim-controller: containers csisim-plugin, livenessprobe are not run",
		"DaemonSet csisim/csisim-node: containers node-driver-registrar, livenessprobe are not run",
		"container csi-provisioner (csi-provisioner) of Deployment csisim/csisim-controller: --v=2 (csisim's simulated sidecars keep no log)",
		"container node-driver-registrar (csi-node-driver-registrar) of DaemonSet csisim/csisim-node: --http-endpoint=:9809 (not modelled)",
		"no Deployment or StatefulSet runs snapshot-controller"} {
		if !strings.Contains(all, part) {
			t.Errorf("not honoured %q lacks %q", not, part)
		}
	}
	yes := strings.Join(honoured, "\n")
	for _, part := range []string{"run as {csisim}", "container csi-attacher (csi-attacher) of Deployment csisim/csisim-controller: " +
		"--csi-address=/csi/csi.sock (must name the driver container's socket", "--leader-election=true (accepted",
		"--kubelet-registration-path=/var/lib/kubelet/plugins/hostpath.csisim.io/csi.sock (must be the driver's socket on the node"} {
		if !strings.Contains(yes, part) {
			t.Errorf("honoured %q lacks %q", honoured, part)
		}
	}
	if f := s.Failures(); len(f) != 0 {
		t.Errorf("csisim's own deployment fails: %q", f)
	}
}
