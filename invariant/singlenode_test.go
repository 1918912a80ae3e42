package invariant

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

func TestSingleNode(t *testing.T) {
	pub := func(n, uid string) trace.CSICall {
		return trace.CSICall{Node: n, Volume: "v1", TargetPath: target(n, uid, "pv1"), AccessMode: "SINGLE_NODE_WRITER"}
	}
	tests := []struct {
		name  string
		mode  corev1.PersistentVolumeAccessMode
		build func(h *hist)
		want  int
	}{
		{"moved: unpublished on node-1 first", corev1.ReadWriteOnce, func(h *hist) {
			h.call("NodePublishVolume", pub("node-1", "a"))
			h.call("NodeUnpublishVolume", trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")})
			h.call("NodePublishVolume", pub("node-2", "b"))
		}, 0},
		{"published on two nodes", corev1.ReadWriteOnce, func(h *hist) {
			h.call("NodePublishVolume", pub("node-1", "a"))
			h.call("NodePublishVolume", pub("node-2", "b"))
		}, 1},
		{"two pods on one node", corev1.ReadWriteOnce, func(h *hist) {
			h.call("NodePublishVolume", pub("node-1", "a"))
			h.call("NodePublishVolume", pub("node-1", "b"))
		}, 0},
		{"ReadWriteMany on two nodes", corev1.ReadWriteMany, func(h *hist) {
			h.call("NodePublishVolume", pub("node-1", "a"))
			h.call("NodePublishVolume", pub("node-2", "b"))
		}, 0},
		{"detached from the first node (force detach)", corev1.ReadWriteOnce, func(h *hist) {
			h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
			h.call("NodePublishVolume", pub("node-1", "a"))
			h.call("ControllerUnpublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
			h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-2"})
			h.call("NodePublishVolume", pub("node-2", "b"))
		}, 0},
		{"attached to two nodes", corev1.ReadWriteOnce, func(h *hist) {
			h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
			h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-2"})
		}, 1},
		{"a failed second publish", corev1.ReadWriteOnce, func(h *hist) {
			h.call("NodePublishVolume", pub("node-1", "a"))
			h.callCode("NodePublishVolume", 9, pub("node-2", "b"))
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.write(pv("pv1", "v1", tt.mode), false)
			tt.build(&h)
			expectViolations(t, h.check(t, singleNode), tt.want)
		})
	}
}

func TestSingleNodeNamesBothPublishes(t *testing.T) {
	var h hist
	first := h.call("NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: "/t1", AccessMode: "SINGLE_NODE_WRITER"})
	second := h.call("NodePublishVolume", trace.CSICall{Node: "node-2", Volume: "v1", TargetPath: "/t2", AccessMode: "SINGLE_NODE_WRITER"})
	// No PV in the history: the CSI access mode decides.
	expectViolations(t, h.check(t, singleNode), 1, first, second)
}
