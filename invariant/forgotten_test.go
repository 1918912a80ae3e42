package invariant

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/trace"
)

// A DeleteVolume while the volume is still staged and published on a node
// whose kubelet restarted and forgot it (expansion-block, nemesis seed 63:
// a raw block volume's NodeUnpublishVolume answer lost, then the restart)
// is still a violation of csi-call-order and nothing-leaked — Kubernetes
// v1.37 does it, and the driver is asked to delete a volume still staged —
// but each says so, naming the restart, and nothing-leaked says that the
// driver did answer the lost unpublish. A use the kubelet still reports
// gets no such note.
func TestForgottenUsesAreReportedAsKubernetes(t *testing.T) {
	stage, publish := stageAndPublish("/run/nodes/node-1/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv1/a")
	attach := trace.CSICall{Volume: "v1", NodeID: "node-1"}
	for _, forgot := range []bool{true, false} {
		var h hist
		h.end = EndState{Observed: true, Nodes: []corev1.Node{*node("node-1", true)}}
		h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME"}})
		h.call("NodeGetCapabilities", trace.CSICall{Node: "node-1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
		h.call("ControllerPublishVolume", attach)
		h.call("NodeStageVolume", stage)
		h.call("NodePublishVolume", publish)
		h.write(nodeUsing("node-1", "v1"), false)
		lost := publish
		lost.Node = ""
		lostSeq := h.add(trace.Entry{Kind: trace.Fault, Actor: "faultproxy:node-1", Verb: "NodeUnpublishVolume", Object: "v1", Call: &lost})
		h.callCode("NodeUnpublishVolume", codes.Unavailable, publish)
		restart := h.add(trace.Entry{Kind: trace.Fault, Actor: "timed", Verb: "kubelet-restart", Object: "Node node-1"})
		if forgot {
			h.write(node("node-1", true), false) // the restarted kubelet reports nothing in use
		} else {
			h.write(nodeUsing("node-1", "v1"), false)
		}
		h.call("ControllerUnpublishVolume", attach)
		h.call("DeleteVolume", trace.CSICall{Volume: "v1"})

		var msgs []string
		for _, inv := range []Invariant{callOrder, nothingLeaked} {
			for _, v := range h.check(t, inv) {
				msgs = append(msgs, v.Message)
				// Each says which known bug it is, so that the run is not
				// failed for it; what the kubelet still knew is the
				// driver's to answer for.
				if want := map[bool]string{true: "kubernetes#121937"}[forgot]; v.KnownUpstream != want {
					t.Errorf("forgot=%v: %s: KnownUpstream %q, want %q", forgot, v.Message, v.KnownUpstream, want)
				}
			}
		}
		var deleted, published string
		for _, m := range msgs {
			switch {
			case strings.HasPrefix(m, "DeleteVolumeWhileInUse"):
				deleted = m
			case strings.Contains(m, "is still published"):
				published = m
			}
		}
		if deleted == "" || published == "" {
			t.Fatalf("forgot=%v: violations %q, want DeleteVolumeWhileInUse and a publish left", forgot, msgs)
		}
		note := "Kubernetes left it so, not the driver: the kubelet of node node-1 restarted (#" + strconv.Itoa(restart) + ")"
		for _, m := range []string{deleted, published} {
			if strings.Contains(m, note) != forgot {
				t.Errorf("forgot=%v: %q, want the note %v", forgot, m, forgot)
			}
		}
		if !strings.Contains(published, "the driver answered OK to a NodeUnpublishVolume of it, #"+strconv.Itoa(lostSeq)+", but the answer was lost") {
			t.Errorf("publish left: %q, want the lost answer named", published)
		}
	}
}

// stageAndPublish are node-1's NodeStageVolume and NodePublishVolume of
// volume v1, published at target.
func stageAndPublish(target string) (stage, publish trace.CSICall) {
	stage = trace.CSICall{Node: "node-1", Volume: "v1", StagingPath: staging("node-1", "v1")}
	publish = trace.CSICall{Node: "node-1", Volume: "v1", StagingPath: stage.StagingPath, TargetPath: target}
	return stage, publish
}

// A DeleteVolume that comes while the volume is only staged, on a cluster
// whose driver needs no attach, is what v1.37 does when a NodeUnstageVolume
// is slow (attach-not-required, nemesis seed 172: an unstage answer lost
// after a hang): still a csi-call-order violation, but a known Kubernetes
// one. A volume still published, or one that needs attaching, gets no such
// verdict: there Kubernetes holds the deletion.
func TestDeleteBeforeUnstageWithoutAttachIsKubernetes(t *testing.T) {
	stage, publish := stageAndPublish("/run/nodes/node-1/kubelet/pods/a/volumes/kubernetes.io~csi/pv1/mount")
	tests := []struct {
		name           string
		attachRequired bool
		unpublished    bool
		want           string
	}{
		{name: "no attach, only staged", unpublished: true, want: "kubernetes#94108"},
		{name: "no attach, still published"},
		{name: "attach required", attachRequired: true, unpublished: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			h.end = EndState{Observed: true, Nodes: []corev1.Node{*node("node-1", true)}}
			h.write(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csisim.io"},
				Spec: storagev1.CSIDriverSpec{AttachRequired: &tc.attachRequired}}, false)
			h.call("NodeGetCapabilities", trace.CSICall{Node: "node-1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
			if tc.attachRequired {
				h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME"}})
				h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
			}
			h.call("NodeStageVolume", stage)
			h.call("NodePublishVolume", publish)
			if tc.unpublished {
				h.call("NodeUnpublishVolume", publish)
			}
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
			var found bool
			for _, v := range h.check(t, callOrder) {
				if !strings.HasPrefix(v.Message, "DeleteVolumeWhileInUse") {
					continue
				}
				found = true
				if v.KnownUpstream != tc.want {
					t.Errorf("%s: KnownUpstream %q, want %q", v.Message, v.KnownUpstream, tc.want)
				}
				if hasNote := strings.Contains(v.Message, "the volume needs no attach"); hasNote != (tc.want != "") {
					t.Errorf("%s: the note is there: %v, want %v", v.Message, hasNote, tc.want != "")
				}
			}
			if !found {
				t.Fatal("no DeleteVolumeWhileInUse")
			}
		})
	}
}
