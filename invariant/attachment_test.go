package invariant

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

func TestAttachMatches(t *testing.T) {
	tests := []struct {
		name  string
		build func(h *hist) (publish int)
		want  int
	}{
		{"to the node the VolumeAttachment names", func(h *hist) int {
			h.write(va("va1", "pv1", "node-1"), false)
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
		}, 0},
		{"node ID as the node plugin reported it", func(h *hist) int {
			h.call("NodeGetInfo", trace.CSICall{Node: "node-1", NodeID: "id-1"})
			h.write(va("va1", "pv1", "node-1"), false)
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "id-1"})
		}, 0},
		{"to an ID another node's plugin reports too", func(h *hist) int {
			h.call("NodeGetInfo", trace.CSICall{Node: "node-1", NodeID: "node-2"})
			h.call("NodeGetInfo", trace.CSICall{Node: "node-2", NodeID: "node-2"})
			h.write(va("va1", "pv1", "node-1"), false)
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-2"})
		}, 1},
		{"to another node", func(h *hist) int {
			h.write(va("va1", "pv1", "node-1"), false)
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-2"})
		}, 1},
		{"with no VolumeAttachment", func(h *hist) int {
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
		}, 1},
		{"a VolumeAttachment of another volume", func(h *hist) int {
			h.write(pv("pv2", "v2", corev1.ReadWriteOnce), false)
			h.write(va("va2", "pv2", "node-1"), false)
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
		}, 1},
		{"beside a VolumeAttachment create the API server refused", func(h *hist) int {
			h.refused("create", "VolumeAttachment", "") // a refused create has no name
			h.write(va("va1", "pv1", "node-1"), false)
			return h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
		}, 0},
		{"its VolumeAttachment recorded after the call", func(h *hist) int {
			publish := h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
			h.write(va("va1", "pv1", "node-1"), false)
			return publish
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			h.write(pv("pv1", "v1", corev1.ReadWriteOnce), false)
			publish := tt.build(&h)
			expectViolations(t, h.check(t, attachMatches), tt.want)
			if got := h.check(t, attachMatches); tt.want > 0 && !slices.Contains(got[0].Entries, publish) {
				t.Errorf("violation names %v, not the publish #%d", got[0].Entries, publish)
			}
		})
	}
}

func TestAttachMatchesNeedsObjects(t *testing.T) {
	var h hist // a backend that records no objects: nothing to compare with
	h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
	expectViolations(t, h.check(t, attachMatches), 0)
}
