package invariant

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

func TestSinglePod(t *testing.T) {
	pub := func(uid string) trace.CSICall {
		return trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", uid, "pv1"), AccessMode: "SINGLE_NODE_WRITER"}
	}
	tests := []struct {
		name  string
		mode  corev1.PersistentVolumeAccessMode
		build func(h *hist)
		want  int
	}{
		{"two pods at once", corev1.ReadWriteOncePod, func(h *hist) {
			h.call("NodePublishVolume", pub("a"))
			h.call("NodePublishVolume", pub("b"))
		}, 1},
		{"one after the other", corev1.ReadWriteOncePod, func(h *hist) {
			h.call("NodePublishVolume", pub("a"))
			h.call("NodeUnpublishVolume", trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")})
			h.call("NodePublishVolume", pub("b"))
		}, 0},
		{"the same pod published again", corev1.ReadWriteOncePod, func(h *hist) {
			h.call("NodePublishVolume", pub("a"))
			h.call("NodePublishVolume", pub("a"))
		}, 0},
		{"ReadWriteOnce: two pods on a node may share it", corev1.ReadWriteOnce, func(h *hist) {
			h.call("NodePublishVolume", pub("a"))
			h.call("NodePublishVolume", pub("b"))
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.write(pv("pv1", "v1", tt.mode), false)
			tt.build(&h)
			expectViolations(t, h.check(t, singlePod), tt.want)
		})
	}
}
