package invariant

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

func TestPodVolumes(t *testing.T) {
	inline := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}}
	empty := corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	app := pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data"), inline, empty)
	published := trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")}
	for _, tt := range []struct {
		name  string
		build func(h *hist)
		// want maps each CSI volume of app to whether it is set up.
		want map[string]bool
	}{
		{"nothing published", func(h *hist) {}, map[string]bool{"data": false, "scratch": false}},
		{"the claim published", func(h *hist) { h.call("NodePublishVolume", published) }, map[string]bool{"data": true, "scratch": false}},
		{"the claim published, then unpublished", func(h *hist) {
			h.call("NodePublishVolume", published)
			h.call("NodeUnpublishVolume", published)
		}, map[string]bool{"data": false, "scratch": false}},
		{"a failed publish", func(h *hist) { h.callCode("NodePublishVolume", 13, published) }, map[string]bool{"data": false, "scratch": false}},
		{"another pod's publish", func(h *hist) {
			h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "b", "pv1")})
		}, map[string]bool{"data": false, "scratch": false}},
		{"both published", func(h *hist) {
			h.call("NodePublishVolume", published)
			h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "csi-x", TargetPath: target("node-1", "a", "scratch")})
		}, map[string]bool{"data": true, "scratch": true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.write(pv("pv1", "v1", corev1.ReadWriteOnce), false)
			h.write(pvc("data", "pv1"), false)
			tt.build(&h)
			got := map[string]bool{}
			for _, v := range PodVolumes(h.entries, app) {
				got[v.Name] = len(v.Targets) > 0
				if v.Name == "data" && v.What != "persistentVolumeClaim" {
					t.Errorf("volume data is a %q, want persistentVolumeClaim", v.What)
				}
				if len(v.Targets) > 0 && !slices.Contains(v.Targets, published.TargetPath) && v.Name == "data" {
					t.Errorf("volume data's targets %v lack %s", v.Targets, published.TargetPath)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("PodVolumes reported %v; want exactly the CSI volumes %v (no emptyDir)", got, tt.want)
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("volume %s set up = %v, want %v", name, got[name], want)
				}
			}
		})
	}
}
