package csiclient

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/trace"
)

// TestRecordCallsStructuredData: each call's entry carries what the
// invariants read: node, the node ID the plugin reported, volume, paths,
// access mode, code, capabilities, and what came before it was sent.
func TestRecordCallsStructuredData(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "csi.sock")
	d, err := mock.New(mock.Config{Name: "mock.csi", NodeID: "id-of-node-1", Mode: mock.ModeAll, Backend: mock.NewBackend(0)})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := d.Start(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	rec := trace.New(clock.RealClock{})
	conn, err := Dial(sock, "kubelet:node-1", rec)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	mode := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	vol, err := conn.Controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{mode}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err != nil {
		t.Fatal(err)
	}
	// Not attached: the mock refuses, and the entry says how.
	_, stageErr := conn.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolume().GetVolumeId(),
		StagingTargetPath: "/staging", VolumeCapability: mode})

	entries := rec.Entries()
	if len(entries) != 4 {
		t.Fatalf("got %d entries, want 4", len(entries))
	}
	create, info, caps, stage := entries[0].Call, entries[1].Call, entries[2].Call, entries[3].Call
	if create.Volume != vol.GetVolume().GetVolumeId() || create.Name != "pvc-1" || create.Node != "" || create.AccessMode != "SINGLE_NODE_WRITER" {
		t.Errorf("CreateVolume: %+v", create)
	}
	if info.Node != "node-1" || info.NodeID != "id-of-node-1" || info.StartedAfter != 1 {
		t.Errorf("NodeGetInfo: %+v; want node-1, the ID it answered, after one entry", info)
	}
	if !slices.Contains(caps.Capabilities, "STAGE_UNSTAGE_VOLUME") || caps.NodeID != "id-of-node-1" {
		t.Errorf("NodeGetCapabilities: %+v", caps)
	}
	if stage.StagingPath != "/staging" || stage.NodeID != "id-of-node-1" || stage.Volume != create.Volume ||
		(stageErr == nil) != (stage.Code == codes.OK) || stage.StartedAfter != 3 {
		t.Errorf("NodeStageVolume (error %v): %+v", stageErr, stage)
	}
}

// hangingNode answers NodeStageVolume only when release is closed.
type hangingNode struct {
	csi.UnimplementedNodeServer
	started chan struct{}
	release chan struct{}
}

func (h *hangingNode) NodeStageVolume(ctx context.Context, _ *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	close(h.started)
	<-h.release
	return &csi.NodeStageVolumeResponse{}, nil
}

// serveHangingNode serves a hangingNode and connects to it as node-1's
// kubelet, recording the calls.
func serveHangingNode(t *testing.T) (*hangingNode, *Conn, *trace.Recorder) {
	path := filepath.Join(t.TempDir(), "csi.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	node := &hangingNode{started: make(chan struct{}), release: make(chan struct{})}
	srv := grpc.NewServer()
	csi.RegisterNodeServer(srv, node)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	rec := trace.New(clock.RealClock{})
	conn, err := Dial("unix://"+path, "kubelet:node-1", rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return node, conn, rec
}

// TestCallInFlight: a call is known from when it is sent (InFlight), with
// its request's data, and is no entry until it returns.
func TestCallInFlight(t *testing.T) {
	node, conn, rec := serveHangingNode(t)
	done := make(chan error, 1)
	go func() {
		_, err := conn.Node.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/staging"})
		done <- err
	}()
	<-node.started
	entries, inFlight := rec.Snapshot()
	if len(entries) != 0 || len(inFlight) != 1 {
		t.Fatalf("while the call hangs: %d entries, %d in flight; want none and the call", len(entries), len(inFlight))
	}
	if c := inFlight[0]; c.Kind != trace.CSI || c.Actor != "kubelet:node-1" || c.Verb != "NodeStageVolume" || c.Object != "vol-1" ||
		c.Call == nil || c.Call.Node != "node-1" || c.Call.Volume != "vol-1" || c.Call.StagingPath != "/staging" || c.Call.StartedAfter != 0 {
		t.Errorf("the call in flight: %+v %+v", c, c.Call)
	}
	close(node.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	entries, inFlight = rec.Snapshot()
	if len(entries) != 1 || len(inFlight) != 0 || entries[0].Detail != "OK" {
		t.Errorf("after the answer: entries %+v, in flight %+v; want the call's entry only", entries, inFlight)
	}
}

// TestCallOfAnEndedProcess: a call whose process ended while it was in
// flight is recorded cut off (Canceled), whatever the driver answered, and
// the ended process makes no call any more (WithProcess).
func TestCallOfAnEndedProcess(t *testing.T) {
	node, conn, rec := serveHangingNode(t)
	var ended atomic.Bool
	ctx := WithProcess(context.Background(), "kubelet:node-1#0", func() bool { return !ended.Load() })
	done := make(chan error, 1)
	go func() {
		_, err := conn.Node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/staging"})
		done <- err
	}()
	<-node.started
	ended.Store(true) // the kubelet restarts
	close(node.release)
	<-done
	if _, err := conn.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/staging"}); status.Code(err) != codes.Unavailable {
		t.Errorf("a call of the ended process: %v, want Unavailable", err)
	}
	entries := rec.Entries()
	if len(entries) != 1 || entries[0].Verb != "NodeStageVolume" || entries[0].Detail != "Canceled" {
		t.Fatalf("entries %+v, want the NodeStageVolume only, Canceled", entries)
	}
}
