package invariant

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/sim/csiclient"
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
		{"detach of a volume a restarted kubelet forgot", func(h *hist) {
			h.write(node("node-1", true), false)
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
			h.write(nodeUsing("node-1", "v1"), false)
			h.add(trace.Entry{Kind: trace.Fault, Actor: "timed", Verb: "kubelet-restart", Object: "Node node-1"})
			h.write(node("node-1", true), false) // the restarted kubelet reports nothing in use
			h.call("ControllerUnpublishVolume", attach)
		}, ""},
		{"detach after a kubelet restart of a volume still reported in use", func(h *hist) {
			h.write(node("node-1", true), false)
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
			h.add(trace.Entry{Kind: trace.Fault, Actor: "timed", Verb: "kubelet-restart", Object: "Node node-1"})
			h.write(nodeUsing("node-1", "v1"), false)
			h.call("ControllerUnpublishVolume", attach)
		}, "ControllerUnpublishBeforeNodeCleanup"},
		{"detach, not reported in use, of a volume staged after the restart", func(h *hist) {
			h.write(node("node-1", true), false)
			h.call("ControllerPublishVolume", attach)
			h.add(trace.Entry{Kind: trace.Fault, Actor: "timed", Verb: "kubelet-restart", Object: "Node node-1"})
			h.call("NodeStageVolume", stage)
			h.write(node("node-1", true), false)
			h.call("ControllerUnpublishVolume", attach)
		}, "ControllerUnpublishBeforeNodeCleanup"},
		{"delete while published", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.call("DeleteVolume", trace.CSICall{Volume: "v1"})
		}, "DeleteVolumeWhileInUse"},
		{"delete while controller-published, refused as in use", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.callCode("DeleteVolume", codes.FailedPrecondition, trace.CSICall{Volume: "v1"})
		}, ""},
		{"delete while staged, refused as in use", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
			h.callCode("DeleteVolume", codes.FailedPrecondition, trace.CSICall{Volume: "v1"})
		}, ""},
		{"delete while controller-published, never reaching the driver", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.callCode("DeleteVolume", codes.Unavailable, trace.CSICall{Volume: "v1"})
		}, ""},
		{"delete while staged, done by the driver", func(h *hist) {
			h.call("ControllerPublishVolume", attach)
			h.call("NodeStageVolume", stage)
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

// sentAfter adds a call that was sent when the timeline had after entries
// and answered with code now: it overlapped the entries in between.
func (h *hist) sentAfter(after int, verb string, code codes.Code, c trace.CSICall) int {
	seq := h.callCode(verb, code, c)
	h.entries[seq-1].Call.StartedAfter = after
	return seq
}

func fmtViolations(vs []orderViolation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s call %d related %v: %s\n", v.kind, v.call, v.related, v.message)
	}
	return b.String()
}

func TestCheckOrder(t *testing.T) {
	stageCaps := func(h *hist) {
		h.call("NodeGetCapabilities", trace.CSICall{Node: "n1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
	}
	attachCaps := func(h *hist) {
		h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME"}})
	}
	cp := trace.CSICall{Volume: "v", NodeID: "n1"}
	st := trace.CSICall{Node: "n1", Volume: "v", StagingPath: "/s"}
	us := trace.CSICall{Node: "n1", Volume: "v", StagingPath: "/s"}
	pb := trace.CSICall{Node: "n1", Volume: "v", StagingPath: "/s", TargetPath: "/t"}
	del := trace.CSICall{Volume: "v"}
	on := func(c trace.CSICall, node string) trace.CSICall {
		if c.Node != "" {
			c.Node = node
		}
		c.NodeID = node
		return c
	}

	for _, tc := range []struct {
		name              string
		build             func(h *hist)
		attachNotRequired bool
		want              []orderKind
		// msg, if set, must be the first violation's message.
		msg string
	}{
		{
			name: "stage sent before controller publish returned",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.sentAfter(2, "NodeStageVolume", codes.OK, st)
			},
			want: []orderKind{nodeBeforeAttach},
		},
		{
			name: "stage sent as controller publish returned",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("NodeStageVolume", st)
			},
		},
		{
			name: "failed controller publish does not count",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.callCode("ControllerPublishVolume", codes.Internal, cp)
				h.call("NodeStageVolume", st)
			},
			want: []orderKind{nodeBeforeAttach},
			msg:  "call #4 NodeStageVolume of volume v on node n1 came before ControllerPublishVolume to that node: the volume is not controller-published there (never published), and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
		},
		{
			name: "attach not required",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("NodeStageVolume", st)
			},
			attachNotRequired: true,
		},
		{
			// A driver without podInfoOnMount gets no
			// csi.storage.k8s.io/ephemeral key; the kubelet still never
			// stages (nor attaches) the inline volume the pod names.
			name: "an inline volume of a driver without podInfoOnMount",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.write(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-1"},
					Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "scratch",
						VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}}}}}, false)
				h.call("NodePublishVolume", trace.CSICall{Node: "n1", Volume: "csi-1",
					TargetPath: "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/scratch/mount"})
			},
		},
		{
			// The same call for a pod volume that is no inline CSI
			// volume is a PV's published without staging.
			name: "a PV published without a staging path",
			build: func(h *hist) {
				stageCaps(h)
				h.write(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-1"},
					Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data",
						VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}, false)
				h.call("NodePublishVolume", trace.CSICall{Node: "n1", Volume: "v",
					TargetPath: "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount"})
			},
			want: []orderKind{publishBeforeStage},
		},
		{
			name: "capabilities unknown: nothing that depends on them is checked",
			build: func(h *hist) {
				h.call("NodePublishVolume", pb)
				h.call("NodeStageVolume", st)
			},
		},
		{
			name: "capabilities the driver lacks",
			build: func(h *hist) {
				h.call("NodeGetCapabilities", trace.CSICall{Node: "n1", Capabilities: []string{"GET_VOLUME_STATS"}})
				h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"LIST_VOLUMES"}})
				h.call("NodePublishVolume", pb)
			},
		},
		{
			name: "a failed capability call teaches nothing",
			build: func(h *hist) {
				h.callCode("NodeGetCapabilities", codes.Unavailable, trace.CSICall{Node: "n1"})
				h.call("NodePublishVolume", pb)
			},
		},
		{
			name: "without staging, publish needs the controller publish",
			build: func(h *hist) {
				h.call("NodeGetCapabilities", trace.CSICall{Node: "n1", Capabilities: []string{"GET_VOLUME_STATS"}})
				attachCaps(h)
				h.call("NodePublishVolume", pb)
			},
			want: []orderKind{nodeBeforeAttach},
			msg:  "call #3 NodePublishVolume of volume v on node n1 came before ControllerPublishVolume to that node: the volume is not controller-published there (never published), and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
		},
		{
			name: "publish names another staging path",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("NodeStageVolume", st)
				other := pb
				other.StagingPath = "/other"
				h.call("NodePublishVolume", other)
			},
			want: []orderKind{publishBeforeStage},
			msg:  "call #5 NodePublishVolume of volume v on node n1 names staging path /other, but the volume is staged at /s (call #4)",
		},
		{
			name: "node calls of an unknown node are not compared with controller calls",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("NodeStageVolume", trace.CSICall{Volume: "v", StagingPath: "/s"})
			},
		},
		{
			name: "controller unpublish from every node",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("ControllerPublishVolume", on(cp, "n2"))
				h.call("NodeStageVolume", st)
				h.call("NodeStageVolume", on(st, "n2"))
				h.call("ControllerUnpublishVolume", trace.CSICall{Volume: "v"})
			},
			want: []orderKind{detachInUse, detachInUse},
		},
		{
			name: "unstage of another path leaves the stage",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("NodeStageVolume", st)
				other := us
				other.StagingPath = "/other"
				h.call("NodeUnstageVolume", other)
				h.call("ControllerUnpublishVolume", cp)
			},
			want: []orderKind{detachInUse},
		},
		{
			name: "a delete is judged before it takes effect",
			build: func(h *hist) {
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("DeleteVolume", del)
				h.call("DeleteVolume", del)
			},
			want: []orderKind{deleteInUse},
		},
		{
			name: "a delete the driver did while the volume is in use",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("NodeStageVolume", st)
				h.call("NodePublishVolume", pb)
				h.call("DeleteVolume", del)
			},
			want: []orderKind{deleteInUse},
			msg:  "call #6 DeleteVolume of volume v came while the volume is still in use: controller-published to n1 (call #3); staged on n1 at /s (call #4); published on n1 at /t (call #5)",
		},
		{
			// (but a DeleteVolume, judged by what it did: checkDelete)
			name: "a failed call is still judged",
			build: func(h *hist) {
				stageCaps(h)
				attachCaps(h)
				h.call("ControllerPublishVolume", cp)
				h.call("NodeStageVolume", st)
				h.callCode("ControllerUnpublishVolume", codes.Unavailable, cp)
			},
			want: []orderKind{detachInUse},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hist
			tc.build(&h)
			got := checkOrder(h.entries, tc.attachNotRequired)
			var kinds []orderKind
			for _, v := range got {
				kinds = append(kinds, v.kind)
			}
			if !reflect.DeepEqual(kinds, tc.want) {
				t.Fatalf("got %v, want %v:\n%s", kinds, tc.want, fmtViolations(got))
			}
			if tc.msg != "" && got[0].message != tc.msg {
				t.Fatalf("message:\n%s\nwant:\n%s", got[0].message, tc.msg)
			}
		})
	}
}

// TestCheckOrderAcrossActors checks the lifecycle across the calls of
// several callers (a sidecar's controller calls, a kubelet's node calls)
// in one timeline: only together do they show the detach that came
// before the unstage.
func TestCheckOrderAcrossActors(t *testing.T) {
	var h hist
	h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME"}})
	h.call("NodeGetCapabilities", trace.CSICall{Node: "n1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
	h.call("ControllerPublishVolume", trace.CSICall{Volume: "v", NodeID: "n1"})
	h.call("NodeStageVolume", trace.CSICall{Node: "n1", Volume: "v", StagingPath: "/s"})
	h.call("ControllerUnpublishVolume", trace.CSICall{Volume: "v", NodeID: "n1"})
	h.call("NodeUnstageVolume", trace.CSICall{Node: "n1", Volume: "v", StagingPath: "/s"})
	if a, b := h.entries[2].Actor, h.entries[3].Actor; a == b {
		t.Fatalf("the calls come from one actor, %s", a)
	}
	vs := checkOrder(h.entries, false)
	if len(vs) != 1 || vs[0].kind != detachInUse || vs[0].call != 5 || !reflect.DeepEqual(vs[0].related, []int{4}) {
		t.Fatalf("violations:\n%s", fmtViolations(vs))
	}
}

// TestCheckOrderOfRecordedCalls drives a mock driver over gRPC the way a
// CO would, right and wrong, through csisim's recording client (a sidecar
// for the controller calls, the kubelet of n1 for the node calls), and
// checks what the order checker makes of the timeline. It learns the
// driver's capabilities and node ID from the calls a CO makes first.
func TestCheckOrderOfRecordedCalls(t *testing.T) {
	const vol = "mock-pvc-1"
	rwo := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	type op func(ctx context.Context, c *recordedCO) error
	create := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.ctrl.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
	}
	del := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.ctrl.Controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol}))
	}
	attach := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.ctrl.Controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: "n1", VolumeCapability: rwo}))
	}
	detach := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.ctrl.Controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol, NodeId: "n1"}))
	}
	stage := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.node.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: "/s", VolumeCapability: rwo,
			PublishContext: map[string]string{mock.PublishContextDevice: "/dev/mock/" + vol}}))
	}
	unstage := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.node.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: "/s"}))
	}
	publish := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.node.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: "/s", TargetPath: "/t", VolumeCapability: rwo}))
	}
	unpublish := func(ctx context.Context, c *recordedCO) error {
		return errOf(c.node.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: "/t"}))
	}
	// Calls #1-#3 are the capability and node calls; the ops start at #4.
	for _, tc := range []struct {
		name    string
		ops     []op
		want    []orderViolation
		mockCfg mock.Config
	}{
		{
			name: "correct lifecycle",
			ops:  []op{create, attach, stage, publish, unpublish, unstage, detach, del},
		},
		{
			name: "correct lifecycle, twice round the node",
			ops:  []op{create, attach, stage, publish, unpublish, unstage, stage, publish, unpublish, unstage, detach, del},
		},
		{
			name: "publish before stage",
			ops:  []op{create, attach, publish},
			want: []orderViolation{{kind: publishBeforeStage, call: 6,
				message: "call #6 NodePublishVolume of volume mock-pvc-1 on node n1 (target /t) came before NodeStageVolume: the volume is not staged on that node (never staged), and the driver has STAGE_UNSTAGE_VOLUME"}},
		},
		{
			name: "publish after unstage",
			ops:  []op{create, attach, stage, unstage, publish},
			want: []orderViolation{{kind: publishBeforeStage, call: 8, related: []int{7},
				message: "call #8 NodePublishVolume of volume mock-pvc-1 on node n1 (target /t) came before NodeStageVolume: the volume is not staged on that node (unstaged by call #7), and the driver has STAGE_UNSTAGE_VOLUME"}},
		},
		{
			name: "stage before controller publish",
			ops:  []op{create, stage},
			want: []orderViolation{{kind: nodeBeforeAttach, call: 5,
				message: "call #5 NodeStageVolume of volume mock-pvc-1 on node n1 came before ControllerPublishVolume to that node: the volume is not controller-published there (never published), and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching"}},
		},
		{
			// The mock refuses it (FAILED_PRECONDITION) and keeps the
			// volume: not a breach (checkDelete).
			name: "delete while in use, refused by the driver",
			ops:  []op{create, attach, stage, publish, del},
		},
		{
			name: "controller unpublish before the node let go",
			ops:  []op{create, attach, stage, publish, detach},
			want: []orderViolation{{kind: detachInUse, call: 8, related: []int{6, 7},
				message: "call #8 ControllerUnpublishVolume of volume mock-pvc-1 from node n1 came while the node still uses it: staged at /s (call #6), published at /t (call #7); NodeUnpublishVolume and NodeUnstageVolume must succeed first"}},
		},
		{
			name: "unstage while published",
			ops:  []op{create, attach, stage, publish, unstage},
			want: []orderViolation{{kind: unstagePublished, call: 8, related: []int{7},
				message: "call #8 NodeUnstageVolume of volume mock-pvc-1 on node n1 came while the volume is still published at /t (call #7); NodeUnpublishVolume must succeed first"}},
		},
		{
			// The kubelet publishes an inline ephemeral volume without
			// staging or attaching it, and says so in the volume context.
			name: "an inline ephemeral volume on a staging, attaching driver",
			ops: []op{func(ctx context.Context, c *recordedCO) error {
				return errOf(c.node.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "csi-1", TargetPath: "/e", VolumeCapability: rwo,
					VolumeContext: map[string]string{"csi.storage.k8s.io/ephemeral": "true"}}))
			}, func(ctx context.Context, c *recordedCO) error {
				return errOf(c.node.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "csi-1", TargetPath: "/e"}))
			}},
		},
		{
			name:    "a driver without staging and attaching",
			mockCfg: mock.Config{NoStageUnstage: true, NoAttach: true},
			ops: []op{create, func(ctx context.Context, c *recordedCO) error {
				return errOf(c.node.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, TargetPath: "/t", VolumeCapability: rwo}))
			}, unpublish, del},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co := newRecordedCO(t, tc.mockCfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := co.node.Node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, err := co.ctrl.Controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, err := co.node.Node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.ops {
				// The mock refuses many wrong calls itself; the
				// checker judges the order they were made in,
				// whatever the answer.
				_ = o(ctx, co)
			}
			entries := co.rec.Entries()
			got := checkOrder(entries, false)
			if !reflect.DeepEqual(got, tc.want) {
				var calls strings.Builder
				for _, e := range entries {
					calls.WriteString("  " + e.String() + "\n")
				}
				t.Fatalf("violations:\n%s\nwant:\n%s\ntimeline:\n%s", fmtViolations(got), fmtViolations(tc.want), calls.String())
			}
		})
	}
}

// recordedCO is a mock driver (node n1, unless the config says otherwise)
// and two recording clients of it, as a sidecar and n1's kubelet, that add
// their calls to one timeline.
type recordedCO struct {
	rec        *trace.Recorder
	ctrl, node *csiclient.Conn
}

func newRecordedCO(t *testing.T, cfg mock.Config) *recordedCO {
	t.Helper()
	// A short directory: a unix socket path may have 108 bytes only.
	dir, err := os.MkdirTemp("", "inv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cfg.NodeID == "" {
		cfg.NodeID = "n1"
	}
	d, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := d.Start("unix://" + filepath.Join(dir, "driver.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	co := &recordedCO{rec: trace.New(clock.RealClock{})}
	for actor, conn := range map[string]**csiclient.Conn{"external-attacher": &co.ctrl, "kubelet:n1": &co.node} {
		c, err := csiclient.Dial(srv.Endpoint(), actor, co.rec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		*conn = c
	}
	return co
}

func errOf[T any](_ T, err error) error { return err }

// TestAttachNotRequired: the CSIDrivers as last written (in the timeline
// or at the end) decide whether the CO attaches.
func TestAttachNotRequired(t *testing.T) {
	driver := func(name string, attach bool) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSIDriverSpec{AttachRequired: &attach}}
	}
	var none hist
	var off hist
	off.write(driver("d", true), false)
	off.write(driver("d", false), false)
	var mixed hist
	mixed.write(driver("d", false), false)
	mixed.write(driver("e", true), false)
	var atEnd hist
	atEnd.write(driver("d", true), false)
	atEnd.end.CSIDrivers = []storagev1.CSIDriver{*driver("d", false)}
	for _, tc := range []struct {
		name string
		h    hist
		want bool
	}{{"no CSIDriver", none, false}, {"the last write says false", off, true}, {"one of two drivers attaches", mixed, false}, {"the end state says false", atEnd, true}} {
		if got := attachNotRequired(&History{Entries: tc.h.entries, End: tc.h.end}); got != tc.want {
			t.Errorf("%s: attachNotRequired = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A Node write the API server refused (a 429 during throttling) changes
// nothing: the node stays as its last stored write says.
func TestNodesDownIgnoresRefusedWrites(t *testing.T) {
	var h hist
	h.write(node("node-1", true), false)
	h.refused("update", "Node", "node-1")
	call := h.call("NodeStageVolume", trace.CSICall{Node: "node-1", Volume: "v1"})
	if nodesDown(h.entries)("node-1", call) {
		t.Error("node-1 is taken as down after a refused write of its status; it was Ready")
	}
}

// nodeUsing is a Ready node whose kubelet reports the volumes (handles of
// hostpath.csisim.io) in use.
func nodeUsing(name string, handles ...string) *corev1.Node {
	n := node(name, true)
	for _, h := range handles {
		n.Status.VolumesInUse = append(n.Status.VolumesInUse, corev1.UniqueVolumeName("kubernetes.io/csi/hostpath.csisim.io^"+h))
	}
	return n
}
