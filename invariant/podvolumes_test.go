package invariant

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

func TestPodVolumesSetUp(t *testing.T) {
	inline := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}}
	ephemeral := corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	empty := corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	tests := []struct {
		name  string
		build func(h *hist) (running int)
		want  int
	}{
		{"claim published before Running", func(h *hist) int {
			h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")})
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data"), empty), false)
		}, 0},
		{"Running with its claim never published", func(h *hist) int {
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data")), false)
		}, 1},
		{"Running with another pod's volume published", func(h *hist) int {
			h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "b", "pv1")})
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data")), false)
		}, 1},
		{"published, then unpublished before Running", func(h *hist) int {
			c := trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")}
			h.call("NodePublishVolume", c)
			h.call("NodeUnpublishVolume", c)
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data")), false)
		}, 1},
		{"an inline csi: volume never published", func(h *hist) int {
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, inline), false)
		}, 1},
		{"an inline csi: volume published", func(h *hist) int {
			h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "csi-x", TargetPath: target("node-1", "a", "scratch")})
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, inline), false)
		}, 0},
		{"a generic ephemeral volume never published", func(h *hist) int {
			h.write(pvc("app-tmp", "pv2"), false)
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, ephemeral), false)
		}, 1},
		{"a migrated in-tree inline volume never published", func(h *hist) int {
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, ebsVolume("disk", "vol-9")), false)
		}, 1},
		{"a migrated in-tree inline volume published under its translated name", func(h *hist) int {
			h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "vol-9", TargetPath: target("node-1", "a", "ebs.csi.aws.com-vol-9")})
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, ebsVolume("disk", "vol-9")), false)
		}, 0},
		{"only volumes no CSI driver sets up", func(h *hist) int {
			return h.write(pod("app", "a", "node-1", corev1.PodRunning, empty), false)
		}, 0},
		{"Pending is not Running", func(h *hist) int {
			return h.write(pod("app", "a", "node-1", corev1.PodPending, inline), false)
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.write(pv("pv1", "v1", corev1.ReadWriteOnce), false)
			h.write(pvc("data", "pv1"), false)
			running := tt.build(&h)
			got := h.check(t, podVolumesSetUp)
			expectViolations(t, got, tt.want)
			if tt.want > 0 {
				expectViolations(t, got, tt.want, running)
			}
		})
	}
}

// On a timeline that learns of writes late, the kubelet's Running may come
// after the unpublish the pod's deletion caused: that is no violation there.
func TestPodVolumesSetUpWithLateWrites(t *testing.T) {
	for _, late := range []bool{false, true} {
		var h hist
		h.write(pv("pv1", "v1", corev1.ReadWriteOnce), false)
		h.write(pvc("data", "pv1"), false)
		c := trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")}
		h.call("NodePublishVolume", c)
		h.call("NodeUnpublishVolume", c)
		h.write(pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data")), false)
		got := run(podVolumesSetUp, &History{Entries: h.entries, LateWrites: late})
		want := 1
		if late {
			want = 0
		}
		if len(got) != want {
			t.Errorf("late writes %v: %d violations %v, want %d", late, len(got), got, want)
		}
	}
}
