package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The args of each sidecar parsed as its binary parses them: defaults,
// values, the binary's own words for what it refuses.
func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name, sidecar string
		args          []string
		want          map[string]string // flag → value
		err           string
	}{
		{name: "provisioner defaults", sidecar: "csi-provisioner",
			want: map[string]string{"timeout": "10s", "retry-interval-start": "1s", "retry-interval-max": "5m0s", "worker-threads": "100",
				"extra-create-metadata": "false", "default-fstype": "", "csi-address": "/run/csi/socket", "leader-election": "false"}},
		{name: "attacher defaults", sidecar: "csi-attacher", want: map[string]string{"timeout": "15s", "worker-threads": "10"}},
		{name: "resizer defaults", sidecar: "csi-resizer", want: map[string]string{"timeout": "10s", "resize-timeout": "10s", "workers": "10"}},
		{name: "snapshotter defaults", sidecar: "csi-snapshotter", want: map[string]string{"timeout": "1m0s", "retry-interval-max": "5m0s"}},
		{name: "registrar defaults", sidecar: "csi-node-driver-registrar",
			want: map[string]string{"timeout": "1s", "kubelet-registration-path": "", "plugin-registration-path": "/registration"}},
		{name: "provisioner flags", sidecar: "csi-provisioner",
			args: []string{"--csi-address=unix:///csi/csi.sock", "--timeout", "30s", "--retry-interval-start=2s", "--retry-interval-max=1m",
				"--extra-create-metadata", "--default-fstype=xfs", "--leader-election", "--v=5", "--feature-gates=Topology=true"},
			want: map[string]string{"csi-address": "unix:///csi/csi.sock", "timeout": "30s", "retry-interval-start": "2s",
				"retry-interval-max": "1m0s", "extra-create-metadata": "true", "default-fstype": "xfs", "leader-election": "true",
				"v": "5", "feature-gates": "Topology=true"}},
		{name: "Go flag's single dash", sidecar: "csi-attacher", args: []string{"-csi-address=/csi/csi.sock", "-timeout=1m"},
			want: map[string]string{"csi-address": "/csi/csi.sock", "timeout": "1m0s"}},
		{name: "unknown flag, Go's flag", sidecar: "csi-attacher", args: []string{"--foo=1"}, err: "flag provided but not defined: -foo"},
		{name: "unknown flag, pflag", sidecar: "csi-provisioner", args: []string{"--foo"}, err: "unknown flag: --foo"},
		{name: "pflag takes no single-dash long flag", sidecar: "csi-provisioner", args: []string{"-csi-address=/csi/csi.sock"},
			err: "unknown shorthand flag: 'c' in -csi-address=/csi/csi.sock"},
		{name: "registrar has no leader election", sidecar: "csi-node-driver-registrar", args: []string{"--leader-election"},
			err: "flag provided but not defined: -leader-election"},
		{name: "bad duration, Go's flag", sidecar: "csi-resizer", args: []string{"--timeout=soon"},
			err: `invalid value "soon" for flag -timeout: parse error`},
		{name: "bad duration, pflag", sidecar: "csi-provisioner", args: []string{"--timeout=soon"},
			err: `invalid argument "soon" for "--timeout" flag: time: invalid duration "soon"`},
		{name: "bad feature gates", sidecar: "csi-snapshotter", args: []string{"--feature-gates=A"}, err: `invalid value "A" for flag -feature-gates: malformed pair, expect string=bool`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, _, err := parseFlags(tc.sidecar, tc.args)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if values[k] != v {
					t.Errorf("--%s = %q, want %q", k, values[k], v)
				}
			}
		})
	}
}

// The kubelet's $(VAR) expansion of args, with the container's env.
func TestExpand(t *testing.T) {
	c := &corev1.Container{Env: []corev1.EnvVar{{Name: "ADDRESS", Value: "/csi/csi.sock"}, {Name: "URL", Value: "unix://$(ADDRESS)"},
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}}
	env := envOf(c, "kube-system")
	for in, want := range map[string]string{
		"--csi-address=$(ADDRESS)": "--csi-address=/csi/csi.sock", "--csi-address=$(URL)": "--csi-address=unix:///csi/csi.sock",
		"--leader-election-namespace=$(NS)": "--leader-election-namespace=kube-system", "$(NODE)": "$(NODE)",
		"$(UNDEFINED)": "$(UNDEFINED)", "$$(ADDRESS)": "$(ADDRESS)", "a$b": "a$b", "$(ADDRESS": "$(ADDRESS", "end$": "end$",
	} {
		if got := expandArgs([]string{in}, env)[0]; got != want {
			t.Errorf("expandArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

// controllerDeploy is a controller StatefulSet (as csi-driver-host-path
// ships it) whose sidecar has the args %s, beside a driver listening on
// /csi/csi.sock.
const controllerDeploy = `
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: controller, namespace: csi}
spec:
  selector: {matchLabels: {app: controller}}
  template:
    metadata: {labels: {app: controller}}
    spec:
      containers:
        - name: plugin
          image: example/driver:1
          args: [--endpoint=$(CSI_ENDPOINT)]
          env: [{name: CSI_ENDPOINT, value: unix:///csi/csi.sock}]
          volumeMounts: [{name: socket, mountPath: /csi}]
        - name: csi-provisioner
          image: registry.k8s.io/sig-storage/csi-provisioner:v6.4.0
          args: [%s]
          env: [{name: ADDRESS, value: /csi/csi.sock}]
          volumeMounts: [{name: socket, mountPath: /csi}]
      volumes: [{name: socket, emptyDir: {}}]
`

// loadWith loads the node DaemonSet (with the registrar's args) and the
// controller StatefulSet (with the provisioner's).
func loadWith(t *testing.T, registrarArgs, provisionerArgs string) *Set {
	t.Helper()
	node := strings.Replace(nodeDS, "args: [--csi-address=/csi/csi.sock]", "args: ["+registrarArgs+"]", 1)
	node = strings.Replace(node, "%s", "        - name: driver\n          image: example/driver:1\n          volumeMounts: [{name: socket, mountPath: /csi}]", 1)
	file := filepath.Join(t.TempDir(), "d.yaml")
	if err := os.WriteFile(file, []byte(node+strings.Replace(controllerDeploy, "%s", provisionerArgs, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const goodRegistrar = "--csi-address=/csi/csi.sock, --kubelet-registration-path=/var/lib/kubelet/plugins/x/csi.sock"

// A sidecar whose flags stop it: refused flags, an address where the driver
// does not listen; and a StatefulSet's sidecar configures its simulated one.
func TestSidecarsDown(t *testing.T) {
	for _, tc := range []struct{ name, args, down string }{
		{"configured", "--csi-address=$(ADDRESS), --timeout=30s", ""},
		{"unknown flag", "--csi-address=$(ADDRESS), --foo", "unknown flag: --foo; the real csi-provisioner exits at start with status 2"},
		{"another socket", "--csi-address=/csi/other.sock", `its --csi-address /csi/other.sock is not where the driver listens (container plugin serves /csi/csi.sock): the real one logs "Still connecting"`},
		{"not on a volume", "--csi-address=/tmp/csi.sock", "its --csi-address /tmp/csi.sock is on no volume it mounts"},
		{"the default address", "", "its --csi-address /run/csi/socket is on no volume it mounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadWith(t, goodRegistrar, tc.args)
			sc := s.Sidecar("csi-provisioner")
			if sc == nil {
				t.Fatal("no csi-provisioner found in the StatefulSet")
			}
			if sc.Workload != "StatefulSet csi/controller" || !strings.HasSuffix(sc.Source, "d.yaml#2") {
				t.Errorf("workload %q, source %q", sc.Workload, sc.Source)
			}
			if down := sc.Down(); tc.down == "" && down != "" || !strings.Contains(down, tc.down) {
				t.Errorf("Down() = %q, want %q", down, tc.down)
			}
			if tc.down == "" && sc.Duration("timeout").String() != "30s" {
				t.Errorf("--timeout %v", sc.Duration("timeout"))
			}
			failures := strings.Join(s.Failures(), "\n")
			if tc.down != "" && !strings.Contains(failures, "container csi-provisioner (csi-provisioner) of StatefulSet csi/controller (") {
				t.Errorf("Failures() = %q, want the container, its workload and file named", failures)
			}
		})
	}
}

// The registrar's --kubelet-registration-path must be the driver's socket
// on the node, through the hostPath volume of its --csi-address.
func TestRegistration(t *testing.T) {
	for _, tc := range []struct{ name, args, unregistered string }{
		{"the socket's host path", goodRegistrar, ""},
		{"the same through $(VAR)-less trailing slash", "--csi-address=/csi/csi.sock, --kubelet-registration-path=/var/lib/kubelet/plugins/x/./csi.sock", ""},
		{"another driver's directory", "--csi-address=/csi/csi.sock, --kubelet-registration-path=/var/lib/kubelet/plugins/y/csi.sock",
			"--kubelet-registration-path=/var/lib/kubelet/plugins/y/csi.sock is not the driver's socket on the node, /var/lib/kubelet/plugins/x/csi.sock"},
		{"none", "--csi-address=/csi/csi.sock", "kubelet-registration-path is a required parameter"},
		{"an unknown flag", goodRegistrar + ", --leader-election", "flag provided but not defined: -leader-election"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadWith(t, tc.args, "--csi-address=/csi/csi.sock")
			if got := s.Node.Unregistered; tc.unregistered == "" && got != "" || !strings.Contains(got, tc.unregistered) {
				t.Errorf("Unregistered = %q, want %q", got, tc.unregistered)
			}
		})
	}
}

// csi-driver-host-path runs its whole driver — plugin, registrar and the
// controller sidecars — in one StatefulSet: that is the node plugin, and
// its sidecars configure the simulated ones.
func TestStatefulSetNodePlugin(t *testing.T) {
	text := strings.Replace(nodeDS, "kind: DaemonSet", "kind: StatefulSet", 1)
	text = strings.Replace(text, "args: [--csi-address=/csi/csi.sock]", "args: ["+goodRegistrar+"]", 1)
	text = strings.Replace(text, "%s", "        - name: plugin\n          image: example/driver:1\n          args: [--endpoint=unix:///csi/csi.sock]\n"+
		"          volumeMounts: [{name: socket, mountPath: /csi}]\n        - name: csi-provisioner\n"+
		"          image: registry.k8s.io/sig-storage/csi-provisioner:v6.4.0\n          args: [--csi-address=/csi/csi.sock, --timeout=1m]\n"+
		"          volumeMounts: [{name: socket, mountPath: /csi}]", 1)
	file := filepath.Join(t.TempDir(), "plugin.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.Workload() != "StatefulSet csi/node" || s.Node.Driver != "plugin" || s.Node.Unregistered != "" {
		t.Errorf("node plugin %s, driver %s, unregistered %q", s.Node.Workload(), s.Node.Driver, s.Node.Unregistered)
	}
	sc := s.Sidecar("csi-provisioner")
	if sc == nil || sc.Workload != "StatefulSet csi/node" || sc.Duration("timeout").String() != "1m0s" || sc.Down() != "" {
		t.Fatalf("provisioner %+v", sc)
	}
	_, not := s.Containers("driver")
	if all := strings.Join(not, "\n"); !strings.Contains(all, "StatefulSet csi/node: containers registrar, liveness are not run") {
		t.Errorf("not honoured %q", not)
	}
}

// The upstream csi-driver-host-path deployment (its repository's
// deploy/kubernetes-*/hostpath directory, taken from its source outside
// this repository, never committed) loads: its StatefulSet is the node
// plugin, and none of its sidecars fails as its flags stand.
func TestUpstreamHostPathDeployment(t *testing.T) {
	dir := os.Getenv("CSISIM_HOSTPATH_DEPLOY")
	if dir == "" {
		t.Skip("CSISIM_HOSTPATH_DEPLOY is unset: set it to a csi-driver-host-path checkout's deploy/kubernetes-1.34/hostpath to run this test")
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.Workload() != "StatefulSet default/csi-hostpathplugin" || s.Node.Driver != "hostpath" {
		t.Errorf("node plugin %s, driver container %s", s.Node.Workload(), s.Node.Driver)
	}
	if f := s.Failures(); len(f) != 0 {
		t.Errorf("failures %q", f)
	}
	for _, image := range []string{"csi-provisioner", "csi-attacher", "csi-resizer", "csi-snapshotter", "csi-external-health-monitor-controller"} {
		if s.Sidecar(image) == nil {
			t.Errorf("no %s found", image)
		}
	}
	honoured, notHonoured := s.Containers("hostpathplugin")
	t.Logf("honoured:\n%s\nnot honoured:\n%s", strings.Join(honoured, "\n"), strings.Join(notHonoured, "\n"))
}

// A feature gate at its default is honoured; one set otherwise is not.
func TestGatesReport(t *testing.T) {
	h, n := gatesReport("csi-provisioner", "Topology=true,CrossNamespaceVolumeDataSource=true,Nope=false")
	if len(h) != 1 || !strings.Contains(h[0], "Topology=true (its default") {
		t.Errorf("honoured %q", h)
	}
	if len(n) != 2 || !strings.Contains(n[0], "CrossNamespaceVolumeDataSource=true (csisim runs it at its default, false)") ||
		!strings.Contains(n[1], "Nope=false (not a gate csisim knows of csi-provisioner") {
		t.Errorf("not honoured %q", n)
	}
}
