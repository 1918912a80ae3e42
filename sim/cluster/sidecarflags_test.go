package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/drivers/manifests"
	"github.com/csisim/csisim/sim/controller"
)

// deployWith is csisim's own deployment with the controller's sidecar
// args edited: each of edits replaces a line of 30-controller.yaml.
func deployWith(t *testing.T, edits ...string) *manifests.Set {
	t.Helper()
	dir := t.TempDir()
	src := "../../deploy/kubernetes"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for i := 0; e.Name() == "30-controller.yaml" && i < len(edits); i += 2 {
			if !strings.Contains(text, edits[i]) {
				t.Fatalf("30-controller.yaml has no %q", edits[i])
			}
			text = strings.Replace(text, edits[i], edits[i+1], 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := manifests.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Each modelled flag of a sidecar container reaches the simulated
// sidecar's settings (Deps.Flags); without --deploy, or for an extra
// driver, they are the defaults (zero).
func TestSidecarFlagsReachTheirSidecar(t *testing.T) {
	const provisioner = "            - --csi-address=/csi/csi.sock\n            - --leader-election\n            - --v=2\n          volumeMounts:\n            - name: socket-dir\n              mountPath: /csi\n        - name: csi-attacher"
	set := deployWith(t,
		provisioner, strings.Replace(provisioner, "--v=2", "--v=2\n            - --timeout=30s\n            - --retry-interval-start=2s\n"+
			"            - --retry-interval-max=1m\n            - --extra-create-metadata\n            - --default-fstype=xfs", 1),
		"image: registry.k8s.io/sig-storage/csi-attacher:v4.13.0\n          args:\n", "image: registry.k8s.io/sig-storage/csi-attacher:v4.13.0\n          args:\n            - --timeout=45s\n",
		"image: registry.k8s.io/sig-storage/csi-resizer:v2.3.0\n          args:\n", "image: registry.k8s.io/sig-storage/csi-resizer:v2.3.0\n          args:\n            - --resize-timeout=20s\n            - --retry-interval-max=2m\n",
		"image: registry.k8s.io/sig-storage/csi-snapshotter:v8.7.0\n          args:\n", "image: registry.k8s.io/sig-storage/csi-snapshotter:v8.7.0\n          args:\n            - --timeout=2m\n            - --retry-interval-start=3s\n")
	c := &Cluster{cfg: Config{Deploy: set}}
	first := &driver{cfg: &c.cfg}
	for _, tc := range []struct {
		component string
		want      controller.SidecarFlags
	}{
		{"external-provisioner", controller.SidecarFlags{Timeout: 30 * time.Second, RetryIntervalStart: 2 * time.Second,
			RetryIntervalMax: time.Minute, ExtraCreateMetadata: true, DefaultFSType: "xfs"}},
		{"external-attacher", controller.SidecarFlags{Timeout: 45 * time.Second, RetryIntervalStart: time.Second, RetryIntervalMax: 5 * time.Minute}},
		{"external-resizer", controller.SidecarFlags{Timeout: 20 * time.Second, ModifyTimeout: 10 * time.Second, RetryIntervalStart: time.Second,
			RetryIntervalMax: 2 * time.Minute}},
		{"csi-snapshotter", controller.SidecarFlags{Timeout: 2 * time.Minute, RetryIntervalStart: 3 * time.Second, RetryIntervalMax: 5 * time.Minute}},
		{"snapshot-controller", controller.SidecarFlags{}}, // no container of it: the defaults
	} {
		s := spec(tc.component)
		if got := c.sidecarFlags(s, first); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.component, got, tc.want)
		}
		if down := c.sidecarDown(s, first); down != "" {
			t.Errorf("%s down: %s", tc.component, down)
		}
		if got := c.sidecarFlags(s, &driver{cfg: &c.cfg, dir: []string{"drivers", "1"}}); got != (controller.SidecarFlags{}) {
			t.Errorf("%s of an extra driver: %+v, want the defaults", tc.component, got)
		}
	}
	// The external-resizer's --timeout set explicitly overrides both.
	set = deployWith(t, "image: registry.k8s.io/sig-storage/csi-resizer:v2.3.0\n          args:\n",
		"image: registry.k8s.io/sig-storage/csi-resizer:v2.3.0\n          args:\n            - --timeout=1m\n            - --resize-timeout=20s\n")
	c = &Cluster{cfg: Config{Deploy: set}}
	if got := c.sidecarFlags(spec("external-resizer"), &driver{cfg: &c.cfg}); got.Timeout != time.Minute || got.ModifyTimeout != time.Minute {
		t.Errorf("resizer with --timeout: %+v", got)
	}
}

// A sidecar whose flags stop the real one is not run.
func TestSidecarDownIsNotRun(t *testing.T) {
	set := deployWith(t, "image: registry.k8s.io/sig-storage/csi-attacher:v4.13.0\n          args:\n",
		"image: registry.k8s.io/sig-storage/csi-attacher:v4.13.0\n          args:\n            - --no-such-flag\n")
	c := &Cluster{cfg: Config{Deploy: set}}
	d := &driver{cfg: &c.cfg}
	if down := c.sidecarDown(spec("external-attacher"), d); !strings.Contains(down, "flag provided but not defined: -no-such-flag") {
		t.Errorf("attacher down: %q", down)
	}
	if down := c.sidecarDown(spec("external-provisioner"), d); down != "" {
		t.Errorf("provisioner down: %q", down)
	}
}
