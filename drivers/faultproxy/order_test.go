package faultproxy

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/drivers/mock"
)

// TestOrderCheckerThroughProxy drives a mock driver through the proxy the
// way a CO would, right and wrong, and checks what the order checker makes
// of the recorded calls. The proxy learns the driver's capabilities and
// node ID from the calls a CO makes first.
func TestOrderCheckerThroughProxy(t *testing.T) {
	const vol = "mock-pvc-1"
	type op func(ctx context.Context, e *env) error
	create := func(ctx context.Context, e *env) error {
		return errOf(e.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
	}
	del := func(ctx context.Context, e *env) error {
		return errOf(e.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol}))
	}
	attach := func(ctx context.Context, e *env) error {
		return errOf(e.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: "n1", VolumeCapability: rwo}))
	}
	detach := func(ctx context.Context, e *env) error {
		return errOf(e.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol, NodeId: "n1"}))
	}
	stage := func(ctx context.Context, e *env) error {
		return errOf(e.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: "/s", VolumeCapability: rwo,
			PublishContext: map[string]string{mock.PublishContextDevice: "/dev/mock/" + vol}}))
	}
	unstage := func(ctx context.Context, e *env) error {
		return errOf(e.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: "/s"}))
	}
	publish := func(ctx context.Context, e *env) error {
		return errOf(e.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: "/s", TargetPath: "/t", VolumeCapability: rwo}))
	}
	unpublish := func(ctx context.Context, e *env) error {
		return errOf(e.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: "/t"}))
	}
	// Calls #1-#3 are the capability and node calls; the ops start at #4.
	for _, tc := range []struct {
		name    string
		ops     []op
		want    []Violation
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
			want: []Violation{{Kind: PublishBeforeStage, VolumeID: vol, NodeID: "n1", Call: 6,
				Message: "call #6 NodePublishVolume of volume mock-pvc-1 on node n1 (target /t) came before NodeStageVolume: the volume is not staged on that node (never staged), and the driver has STAGE_UNSTAGE_VOLUME"}},
		},
		{
			name: "publish after unstage",
			ops:  []op{create, attach, stage, unstage, publish},
			want: []Violation{{Kind: PublishBeforeStage, VolumeID: vol, NodeID: "n1", Call: 8, Related: []int{7},
				Message: "call #8 NodePublishVolume of volume mock-pvc-1 on node n1 (target /t) came before NodeStageVolume: the volume is not staged on that node (unstaged by call #7), and the driver has STAGE_UNSTAGE_VOLUME"}},
		},
		{
			name: "stage before controller publish",
			ops:  []op{create, stage},
			want: []Violation{{Kind: NodeBeforeAttach, VolumeID: vol, NodeID: "n1", Call: 5,
				Message: "call #5 NodeStageVolume of volume mock-pvc-1 on node n1 came before ControllerPublishVolume to that node: the volume is not controller-published there (never published), and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching"}},
		},
		{
			name: "delete while in use",
			ops:  []op{create, attach, stage, publish, del},
			want: []Violation{{Kind: DeleteInUse, VolumeID: vol, Call: 8, Related: []int{5, 6, 7},
				Message: "call #8 DeleteVolume of volume mock-pvc-1 came while the volume is still in use: controller-published to n1 (call #5); staged on n1 at /s (call #6); published on n1 at /t (call #7)"}},
		},
		{
			name: "controller unpublish before the node let go",
			ops:  []op{create, attach, stage, publish, detach},
			want: []Violation{{Kind: DetachInUse, VolumeID: vol, NodeID: "n1", Call: 8, Related: []int{6, 7},
				Message: "call #8 ControllerUnpublishVolume of volume mock-pvc-1 from node n1 came while the node still uses it: staged at /s (call #6), published at /t (call #7); NodeUnpublishVolume and NodeUnstageVolume must succeed first"}},
		},
		{
			name: "unstage while published",
			ops:  []op{create, attach, stage, publish, unstage},
			want: []Violation{{Kind: UnstagePublished, VolumeID: vol, NodeID: "n1", Call: 8, Related: []int{7},
				Message: "call #8 NodeUnstageVolume of volume mock-pvc-1 on node n1 came while the volume is still published at /t (call #7); NodeUnpublishVolume must succeed first"}},
		},
		{
			// The kubelet publishes an inline ephemeral volume without
			// staging or attaching it, and says so in the volume context.
			name: "an inline ephemeral volume on a staging, attaching driver",
			ops: []op{func(ctx context.Context, e *env) error {
				return errOf(e.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "csi-1", TargetPath: "/e", VolumeCapability: rwo,
					VolumeContext: map[string]string{"csi.storage.k8s.io/ephemeral": "true"}}))
			}, func(ctx context.Context, e *env) error {
				return errOf(e.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "csi-1", TargetPath: "/e"}))
			}},
		},
		{
			name:    "a driver without staging and attaching",
			mockCfg: mock.Config{NoStageUnstage: true, NoAttach: true},
			ops: []op{create, func(ctx context.Context, e *env) error {
				return errOf(e.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, TargetPath: "/t", VolumeCapability: rwo}))
			}, unpublish, del},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{}, tc.mockCfg)
			ctx := ctxT(t)
			if _, err := e.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.ops {
				// The mock refuses many wrong calls itself; the
				// checker judges the order they were made in,
				// whatever the answer.
				_ = o(ctx, e)
			}
			got := e.proxy.Violations()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations:\n%s\nwant:\n%s\nhistory:\n%s", fmtViolations(got), fmtViolations(tc.want), fmtCalls(e.proxy.History()))
			}
		})
	}
}

func fmtViolations(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s %s/%s call %d related %v: %s\n", v.Kind, v.VolumeID, v.NodeID, v.Call, v.Related, v.Message)
	}
	return b.String()
}

func fmtCalls(cs []Call) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}

// hc describes a call of a synthetic history: method, volume, node,
// paths, and when it arrived and returned, in milliseconds.
type hc struct {
	method, vol, node, staging, target string
	start, end                         int
	code                               codes.Code
	caps                               []string
	proxy                              string
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func history(calls ...hc) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = Call{
			Seq: i + 1, Method: c.method, VolumeID: c.vol, NodeID: c.node, StagingPath: c.staging, TargetPath: c.target,
			Start: t0.Add(time.Duration(c.start) * time.Millisecond), Duration: time.Duration(c.end-c.start) * time.Millisecond,
			Code: c.code, Capabilities: c.caps, Proxy: c.proxy,
		}
	}
	return out
}

func TestCheckOrder(t *testing.T) {
	stageCaps := hc{method: "NodeGetCapabilities", caps: []string{"STAGE_UNSTAGE_VOLUME"}}
	attachCaps := hc{method: "ControllerGetCapabilities", caps: []string{"PUBLISH_UNPUBLISH_VOLUME"}}
	noCaps := func(m string) hc { return hc{method: m, caps: []string{"GET_VOLUME_STATS"}} }
	at := func(c hc, start, end int) hc { c.start, c.end = start, end; return c }
	cp := hc{method: "ControllerPublishVolume", vol: "v", node: "n1"}
	cu := hc{method: "ControllerUnpublishVolume", vol: "v", node: "n1"}
	st := hc{method: "NodeStageVolume", vol: "v", node: "n1", staging: "/s"}
	us := hc{method: "NodeUnstageVolume", vol: "v", node: "n1", staging: "/s"}
	pb := hc{method: "NodePublishVolume", vol: "v", node: "n1", staging: "/s", target: "/t"}
	del := hc{method: "DeleteVolume", vol: "v"}

	for _, tc := range []struct {
		name  string
		calls []Call
		lc    Lifecycle
		want  []ViolationKind
		// msg, if set, must be the first violation's message.
		msg string
	}{
		{
			name:  "stage sent before controller publish returned",
			calls: history(stageCaps, attachCaps, at(cp, 10, 30), at(st, 20, 40)),
			want:  []ViolationKind{NodeBeforeAttach},
		},
		{
			name:  "stage sent as controller publish returned",
			calls: history(stageCaps, attachCaps, at(cp, 10, 30), at(st, 30, 40)),
		},
		{
			name: "failed controller publish does not count",
			calls: history(stageCaps, attachCaps, func() hc { c := at(cp, 10, 20); c.code = codes.Internal; return c }(),
				at(st, 30, 40)),
			want: []ViolationKind{NodeBeforeAttach},
			msg:  "call #4 NodeStageVolume of volume v on node n1 came before ControllerPublishVolume to that node: the volume is not controller-published there (never published), and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
		},
		{
			name:  "attach not required",
			calls: history(stageCaps, attachCaps, at(st, 10, 20)),
			lc:    Lifecycle{AttachNotRequired: true},
		},
		{
			name:  "capabilities unknown: nothing that depends on them is checked",
			calls: history(at(pb, 10, 20), at(st, 30, 40)),
		},
		{
			name:  "capabilities configured",
			calls: history(at(pb, 10, 20)),
			lc:    Lifecycle{StageUnstage: CapabilityPresent, PublishUnpublish: CapabilityPresent},
			want:  []ViolationKind{PublishBeforeStage},
		},
		{
			name:  "configured absent overrides learned",
			calls: history(stageCaps, attachCaps, at(pb, 10, 20)),
			lc:    Lifecycle{StageUnstage: CapabilityAbsent, PublishUnpublish: CapabilityAbsent},
		},
		{
			name:  "without staging, publish needs the controller publish",
			calls: history(noCaps("NodeGetCapabilities"), attachCaps, at(pb, 10, 20)),
			want:  []ViolationKind{NodeBeforeAttach},
			msg:   "call #3 NodePublishVolume of volume v on node n1 came before ControllerPublishVolume to that node: the volume is not controller-published there (never published), and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
		},
		{
			name:  "publish names another staging path",
			calls: history(stageCaps, attachCaps, at(cp, 1, 2), at(st, 3, 4), func() hc { c := at(pb, 5, 6); c.staging = "/other"; return c }()),
			want:  []ViolationKind{PublishBeforeStage},
			msg:   "call #5 NodePublishVolume of volume v on node n1 names staging path /other, but the volume is staged at /s (call #4)",
		},
		{
			name:  "node calls of an unknown node are not compared with controller calls",
			calls: history(stageCaps, attachCaps, func() hc { c := at(st, 10, 20); c.node = ""; return c }()),
		},
		{
			name: "controller unpublish from every node",
			calls: history(stageCaps, attachCaps,
				at(cp, 1, 2), func() hc { c := at(cp, 3, 4); c.node = "n2"; return c }(),
				at(st, 5, 6), func() hc { c := at(st, 7, 8); c.node = "n2"; return c }(),
				func() hc { c := at(cu, 9, 10); c.node = ""; return c }()),
			want: []ViolationKind{DetachInUse, DetachInUse},
		},
		{
			name: "unstage of another path leaves the stage",
			calls: history(stageCaps, attachCaps, at(cp, 1, 2), at(st, 3, 4),
				func() hc { c := at(us, 5, 6); c.staging = "/other"; return c }(), at(cu, 7, 8)),
			want: []ViolationKind{DetachInUse},
		},
		{
			name:  "an instant delete is judged before it takes effect",
			calls: history(attachCaps, at(cp, 1, 2), at(del, 5, 5), at(del, 6, 7)),
			want:  []ViolationKind{DeleteInUse},
		},
		{
			name:  "a failed call is still judged",
			calls: history(attachCaps, at(cp, 1, 2), func() hc { c := at(del, 5, 6); c.code = codes.FailedPrecondition; return c }()),
			want:  []ViolationKind{DeleteInUse},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckOrder(tc.calls, tc.lc)
			var kinds []ViolationKind
			for _, v := range got {
				kinds = append(kinds, v.Kind)
			}
			if !reflect.DeepEqual(kinds, tc.want) {
				t.Fatalf("got %v, want %v:\n%s", kinds, tc.want, fmtViolations(got))
			}
			if tc.msg != "" && got[0].Message != tc.msg {
				t.Fatalf("message:\n%s\nwant:\n%s", got[0].Message, tc.msg)
			}
		})
	}
}

// TestMergeHistories checks the lifecycle across a controller proxy and a
// node proxy, as in a cluster where they front different sockets.
func TestMergeHistories(t *testing.T) {
	ctrl := history(
		hc{method: "ControllerGetCapabilities", caps: []string{"PUBLISH_UNPUBLISH_VOLUME"}, proxy: "ctrl"},
		hc{method: "ControllerPublishVolume", vol: "v", node: "n1", start: 10, end: 20, proxy: "ctrl"},
		hc{method: "ControllerUnpublishVolume", vol: "v", node: "n1", start: 50, end: 60, proxy: "ctrl"},
	)
	node := history(
		hc{method: "NodeGetCapabilities", caps: []string{"STAGE_UNSTAGE_VOLUME"}, proxy: "n1"},
		hc{method: "NodeStageVolume", vol: "v", node: "n1", staging: "/s", start: 30, end: 40, proxy: "n1"},
		hc{method: "NodeUnstageVolume", vol: "v", node: "n1", staging: "/s", start: 70, end: 80, proxy: "n1"},
	)
	merged := Merge(ctrl, node)
	var order []string
	for i, c := range merged {
		if c.Seq != i+1 {
			t.Fatalf("call %d has Seq %d", i, c.Seq)
		}
		order = append(order, c.Proxy+":"+c.Method)
	}
	want := "ctrl:ControllerGetCapabilities n1:NodeGetCapabilities ctrl:ControllerPublishVolume n1:NodeStageVolume ctrl:ControllerUnpublishVolume n1:NodeUnstageVolume"
	if strings.Join(order, " ") != want {
		t.Fatalf("merged order:\n%s\nwant:\n%s", strings.Join(order, " "), want)
	}
	vs := CheckOrder(merged, Lifecycle{})
	if len(vs) != 1 || vs[0].Kind != DetachInUse || vs[0].Call != 5 || !reflect.DeepEqual(vs[0].Related, []int{4}) {
		t.Fatalf("violations:\n%s", fmtViolations(vs))
	}
	// Each history alone shows nothing wrong.
	if v := append(CheckOrder(ctrl, Lifecycle{}), CheckOrder(node, Lifecycle{})...); len(v) != 0 {
		t.Fatalf("separate histories: %s", fmtViolations(v))
	}
}
