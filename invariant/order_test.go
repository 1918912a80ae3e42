package invariant

import (
	"strings"
	"testing"

	"github.com/csisim/csisim/trace"
)

func TestCallOrder(t *testing.T) {
	caps := func(h *hist) {
		h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME"}})
		h.call("NodeGetCapabilities", trace.CSICall{Node: "node-1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
	}
	stage := trace.CSICall{Node: "node-1", Volume: "v1", StagingPath: staging("node-1", "v1")}
	publish := trace.CSICall{Node: "node-1", Volume: "v1", StagingPath: staging("node-1", "v1"), TargetPath: target("node-1", "a", "pv1")}
	attach := trace.CSICall{Volume: "v1", NodeID: "node-1"}
	tests := []struct {
		name  string
		build func(h *hist)
		want  string // the violation kind, "" for none
	}{
		{"the whole lifecycle in order", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1", Name: "pvc-1"})
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
			h.call("NodePublishVolume", publish)
			h.call("NodeUnpublishVolume", publish)
			h.call("NodeUnstageVolume", stage)
			h.call("ControllerUnpublishVolume", attach)
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
		}, ""},
		{"publish before stage", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.call("NodePublishVolume", publish)
		}, "NodePublishBeforeNodeStage"},
		{"stage before attach", func(h *hist) {
			h.call("NodeStageVolume", stage)
		}, "NodeBeforeControllerPublish"},
		{"detach while staged on a live node", func(h *hist) {
			h.write(node("node-1", true), false)
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
			h.call("ControllerUnpublishVolume", attach)
		}, "ControllerUnpublishBeforeNodeCleanup"},
		{"force detach from a node that is down", func(h *hist) {
			h.write(node("node-1", true), false)
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
			h.write(node("node-1", false), false)
			h.call("ControllerUnpublishVolume", attach)
		}, ""},
		{"delete while published", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
		}, "DeleteVolumeWhileInUse"},
		{"a publish sent before the stage had answered", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			// Both sent after the attach; the stage's answer comes first.
			h.add(trace.Entry{Kind: trace.CSI, Verb: "NodeStageVolume", Call: &trace.CSICall{Node: "node-1", NodeID: "node-1", Volume: "v1",
				StagingPath: stage.StagingPath, StartedAfter: len(h.entries)}})
			h.add(trace.Entry{Kind: trace.CSI, Verb: "NodePublishVolume", Call: &trace.CSICall{Node: "node-1", NodeID: "node-1", Volume: "v1",
				StagingPath: publish.StagingPath, TargetPath: publish.TargetPath, StartedAfter: len(h.entries) - 1}})
		}, "NodePublishBeforeNodeStage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			caps(&h)
			tt.build(&h)
			got := h.check(t, callOrder)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("got %+v, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0].Message, tt.want+":")):
				t.Fatalf("got %+v, want one %s", got, tt.want)
			}
		})
	}
}
