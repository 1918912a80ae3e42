package mock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// socketDir returns a short directory for sockets: t.TempDir's path, named
// after the test, can exceed the 108 bytes a unix socket path may have.
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// client is a gRPC connection to a served driver.
type client struct {
	id   csi.IdentityClient
	ctrl csi.ControllerClient
	node csi.NodeClient
	d    *Driver
}

// serve starts a driver for cfg in dir and connects a client; both stop
// when the test ends.
func serve(t testing.TB, dir string, cfg Config) *client {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	name := string(d.Config().Mode) + "-" + cfg.NodeID + ".sock"
	srv, err := d.Start("unix://" + filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	conn, err := grpc.NewClient(srv.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &client{id: csi.NewIdentityClient(conn), ctrl: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn), d: d}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func blockCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var (
	rwo = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	rwx = mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
)

// step is one call of a lifecycle table and the code it must return.
type step struct {
	name string
	call func(context.Context) error
	want codes.Code
	// msg, if set, must be part of the error message.
	msg string
}

func runSteps(t *testing.T, steps []step) {
	t.Helper()
	for i, s := range steps {
		err := s.call(ctxT(t))
		if got := status.Code(err); got != s.want {
			t.Fatalf("step %d (%s): got %v (%v), want %v", i+1, s.name, got, err, s.want)
		}
		if s.msg != "" && !strings.Contains(status.Convert(err).Message(), s.msg) {
			t.Fatalf("step %d (%s): message %q does not contain %q", i+1, s.name, status.Convert(err).Message(), s.msg)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown mode", Config{Mode: "both", NodeID: "n"}, "unknown mode"},
		{"node without ID", Config{Mode: ModeNode}, "node ID is required"},
		{"all without ID", Config{}, "node ID is required"},
		{"negative limit", Config{NodeID: "n", MaxVolumesPerNode: -1}, "max volumes"},
		{"negative capacity", Config{NodeID: "n", Capacity: -1}, "capacity"},
		{"capacity with shared backend", Config{NodeID: "n", Capacity: 10, Backend: NewBackend(0)}, "shared backend"},
		{"unknown latency key", Config{NodeID: "n", Latency: map[string]time.Duration{"NodeStage": time.Second}}, "not a CSI method"},
		{"foreign full name", Config{NodeID: "n", Latency: map[string]time.Duration{"/x.y/CreateVolume": time.Second}}, "not a CSI method"},
		{"negative latency", Config{NodeID: "n", Latency: map[string]time.Duration{"CreateVolume": -time.Second}}, "negative"},
		{"negative default latency", Config{NodeID: "n", DefaultLatency: -1}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Controllers sharing a backend must agree on attaching.
	b := NewBackend(0)
	if _, err := New(Config{Mode: ModeController, Backend: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Mode: ModeController, Backend: b, NoAttach: true}); err == nil || !strings.Contains(err.Error(), "PUBLISH_UNPUBLISH_VOLUME") {
		t.Fatalf("disagreeing controllers: got %v", err)
	}
}

func TestIdentityAndCapabilities(t *testing.T) {
	dir := socketDir(t)
	for _, tc := range []struct {
		cfg            Config
		wantController bool
		wantCtrlCaps   []string
		wantNodeCaps   []string
		wantNodeCode   codes.Code
		wantCtrlCode   codes.Code
	}{
		{
			cfg: Config{Name: "a.example", NodeID: "n1", Capacity: 1 << 40}, wantController: true,
			wantCtrlCaps: []string{"CREATE_DELETE_VOLUME", "LIST_VOLUMES", "LIST_VOLUMES_PUBLISHED_NODES", "GET_VOLUME", "EXPAND_VOLUME", "MODIFY_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "GET_CAPACITY"},
			wantNodeCaps: []string{"GET_VOLUME_STATS", "EXPAND_VOLUME", "STAGE_UNSTAGE_VOLUME"},
		},
		{
			cfg: Config{Name: "b.example", NodeID: "n2", NoAttach: true, NoStageUnstage: true}, wantController: true,
			wantCtrlCaps: []string{"CREATE_DELETE_VOLUME", "LIST_VOLUMES", "LIST_VOLUMES_PUBLISHED_NODES", "GET_VOLUME", "EXPAND_VOLUME", "MODIFY_VOLUME"},
			wantNodeCaps: []string{"GET_VOLUME_STATS", "EXPAND_VOLUME"},
		},
		{
			cfg: Config{Name: "c.example", Mode: ModeController}, wantController: true,
			wantCtrlCaps: []string{"CREATE_DELETE_VOLUME", "LIST_VOLUMES", "LIST_VOLUMES_PUBLISHED_NODES", "GET_VOLUME", "EXPAND_VOLUME", "MODIFY_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"},
			wantNodeCode: codes.Unimplemented,
		},
		{
			cfg: Config{Name: "d.example", Mode: ModeNode, NodeID: "n3"}, wantCtrlCode: codes.Unimplemented,
			wantNodeCaps: []string{"GET_VOLUME_STATS", "EXPAND_VOLUME", "STAGE_UNSTAGE_VOLUME"},
		},
	} {
		t.Run(tc.cfg.Name, func(t *testing.T) {
			c := serve(t, dir, tc.cfg)
			ctx := ctxT(t)
			info, err := c.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
			if err != nil || info.GetName() != tc.cfg.Name || info.GetVendorVersion() != VendorVersion {
				t.Fatalf("GetPluginInfo: %v, %v", info, err)
			}
			pc, err := c.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var controller, online bool
			for _, c := range pc.GetCapabilities() {
				controller = controller || c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE
				online = online || c.GetVolumeExpansion().GetType() == csi.PluginCapability_VolumeExpansion_ONLINE
			}
			if controller != tc.wantController || online != tc.wantController {
				t.Fatalf("plugin capabilities %v: want controller service and online expansion %t", pc.GetCapabilities(), tc.wantController)
			}
			probe, err := c.id.Probe(ctx, &csi.ProbeRequest{})
			if err != nil || !probe.GetReady().GetValue() {
				t.Fatalf("Probe: %v, %v", probe, err)
			}

			cc, err := c.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
			if status.Code(err) != tc.wantCtrlCode {
				t.Fatalf("ControllerGetCapabilities: %v", err)
			}
			var ctrlCaps []string
			for _, cp := range cc.GetCapabilities() {
				ctrlCaps = append(ctrlCaps, cp.GetRpc().GetType().String())
			}
			if strings.Join(ctrlCaps, ",") != strings.Join(tc.wantCtrlCaps, ",") {
				t.Fatalf("controller capabilities %v, want %v", ctrlCaps, tc.wantCtrlCaps)
			}

			nc, err := c.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
			if status.Code(err) != tc.wantNodeCode {
				t.Fatalf("NodeGetCapabilities: %v", err)
			}
			var nodeCaps []string
			for _, cp := range nc.GetCapabilities() {
				nodeCaps = append(nodeCaps, cp.GetRpc().GetType().String())
			}
			if strings.Join(nodeCaps, ",") != strings.Join(tc.wantNodeCaps, ",") {
				t.Fatalf("node capabilities %v, want %v", nodeCaps, tc.wantNodeCaps)
			}
			if tc.wantNodeCode == codes.OK {
				ni, err := c.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
				if err != nil || ni.GetNodeId() != tc.cfg.NodeID {
					t.Fatalf("NodeGetInfo: %v, %v", ni, err)
				}
			}
		})
	}
}

func TestCreateVolume(t *testing.T) {
	c := serve(t, socketDir(t), Config{NodeID: "n1", Capacity: 10 << 30})
	create := func(name string, r *csi.CapacityRange, caps ...*csi.VolumeCapability) func(context.Context) error {
		return func(ctx context.Context) error {
			resp, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, CapacityRange: r, VolumeCapabilities: caps})
			if err == nil && resp.GetVolume().GetVolumeId() != volumeIDFor(name) {
				t.Errorf("CreateVolume %s: ID %q, want %q", name, resp.GetVolume().GetVolumeId(), volumeIDFor(name))
			}
			return err
		}
	}
	gib := func(req, limit int64) *csi.CapacityRange {
		return &csi.CapacityRange{RequiredBytes: req << 30, LimitBytes: limit << 30}
	}
	runSteps(t, []step{
		{"no name", create("", nil, rwo), codes.InvalidArgument, "name is required"},
		{"no capabilities", create("a", nil), codes.InvalidArgument, "capabilities are required"},
		{"capability without access mode", create("a", nil, &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}), codes.InvalidArgument, "access mode"},
		{"capability without access type", create("a", nil, &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}), codes.InvalidArgument, "access type"},
		{"required above limit", create("a", gib(2, 1), rwo), codes.InvalidArgument, "exceed limit"},
		{"negative", create("a", &csi.CapacityRange{RequiredBytes: -1}, rwo), codes.InvalidArgument, "negative"},
		{"create", create("a", gib(2, 0), rwo), codes.OK, ""},
		{"same again", create("a", gib(2, 0), rwo), codes.OK, ""},
		{"same again, range still fits", create("a", gib(1, 3), rwo), codes.OK, ""},
		{"same name, range does not fit", create("a", gib(3, 0), rwo), codes.AlreadyExists, "outside the requested range"},
		{"same name, block", create("a", gib(2, 0), blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)), codes.AlreadyExists, "block access"},
		{"larger than the backend", create("huge", gib(11, 0), rwo), codes.OutOfRange, "total capacity"},
		{"fills the backend", create("b", gib(8, 0), rwo), codes.OK, ""},
		{"no room left", create("c", gib(1, 0), rwo), codes.ResourceExhausted, "free"},
		{"default size within limit", create("d", nil, rwo), codes.ResourceExhausted, ""},
		{"content source", func(ctx context.Context) error {
			return errOf(c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "e", VolumeCapabilities: []*csi.VolumeCapability{rwo},
				VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "mock-a"}}}}))
		}, codes.InvalidArgument, "content sources"},
		{"delete frees room", func(ctx context.Context) error {
			return errOf(c.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: volumeIDFor("b")}))
		}, codes.OK, ""},
		{"room again", create("c", gib(1, 0), rwo), codes.OK, ""},
	})
	if used, capacity := c.d.Backend().Usage(); used != 3<<30 || capacity != 10<<30 {
		t.Fatalf("usage %d of %d, want %d of %d", used, capacity, 3<<30, 10<<30)
	}
	if got := volumeIDFor(strings.Repeat("x", 200)); len(got) > maxIDLength {
		t.Fatalf("ID of a long name is %d bytes", len(got))
	}
}

func TestControllerPublish(t *testing.T) {
	b := NewBackend(0)
	dir := socketDir(t)
	ctrl := serve(t, dir, Config{Mode: ModeController, Backend: b}).ctrl
	serve(t, dir, Config{Mode: ModeNode, NodeID: "n1", Backend: b, MaxVolumesPerNode: 2})
	serve(t, dir, Config{Mode: ModeNode, NodeID: "n2", Backend: b})
	ctx := ctxT(t)
	for _, name := range []string{"a", "b", "c", "x"} {
		capability := rwo
		if name == "x" {
			capability = rwx
		}
		if _, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{capability}}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(vol, node string, c *csi.VolumeCapability, ro bool) func(context.Context) error {
		return func(ctx context.Context) error {
			resp, err := ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: node, VolumeCapability: c, Readonly: ro})
			if err == nil && resp.GetPublishContext()[PublishContextDevice] != "/dev/mock/"+vol {
				t.Errorf("publish context %v", resp.GetPublishContext())
			}
			return err
		}
	}
	unpublish := func(vol, node string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol, NodeId: node}))
		}
	}
	runSteps(t, []step{
		{"no volume ID", publish("", "n1", rwo, false), codes.InvalidArgument, "volume ID"},
		{"no node ID", publish("mock-a", "", rwo, false), codes.InvalidArgument, "node ID"},
		{"no capability", publish("mock-a", "n1", nil, false), codes.InvalidArgument, "capability"},
		{"unknown volume", publish("mock-zz", "n1", rwo, false), codes.NotFound, "volume mock-zz"},
		{"unknown node", publish("mock-a", "n9", rwo, false), codes.NotFound, "node n9"},
		{"wrong access type", publish("mock-a", "n1", blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), false), codes.InvalidArgument, "mount access"},
		{"publish", publish("mock-a", "n1", rwo, false), codes.OK, ""},
		{"again", publish("mock-a", "n1", rwo, false), codes.OK, ""},
		{"again, readonly", publish("mock-a", "n1", rwo, true), codes.AlreadyExists, "readonly=false"},
		{"single-node volume to a second node", publish("mock-a", "n2", rwo, false), codes.FailedPrecondition, "cannot also be published"},
		{"multi-node volume to two nodes", publish("mock-x", "n2", rwx, false), codes.OK, ""},
		{"multi-node volume, second node", publish("mock-x", "n1", rwx, false), codes.OK, ""},
		{"node limit reached", publish("mock-b", "n1", rwo, false), codes.ResourceExhausted, "maximum of 2"},
		{"unpublish", unpublish("mock-a", "n1"), codes.OK, ""},
		{"unpublish again", unpublish("mock-a", "n1"), codes.OK, ""},
		{"unpublish unknown volume", unpublish("mock-zz", "n1"), codes.OK, ""},
		{"room under the limit", publish("mock-b", "n1", rwo, false), codes.OK, ""},
		{"unpublish from every node", unpublish("mock-x", ""), codes.OK, ""},
		{"unpublish needs a volume", unpublish("", "n1"), codes.InvalidArgument, "volume ID"},
	})
	v, _ := b.Volume("mock-x")
	if len(v.PublishedNodes) != 0 {
		t.Fatalf("mock-x still published to %v", v.PublishedNodes)
	}
	v, _ = b.Volume("mock-b")
	if strings.Join(v.PublishedNodes, ",") != "n1" {
		t.Fatalf("mock-b published to %v, want n1", v.PublishedNodes)
	}
}

// TestLifecycle runs a volume through its whole life on a controller and a
// node served separately on a shared backend, with the mistakes a CO can
// make on the way.
func TestLifecycle(t *testing.T) {
	b := NewBackend(0)
	dir := socketDir(t)
	ctrl := serve(t, dir, Config{Mode: ModeController, Backend: b}).ctrl
	node := serve(t, dir, Config{Mode: ModeNode, NodeID: "n1", Backend: b}).node
	other := serve(t, dir, Config{Mode: ModeNode, NodeID: "n2", Backend: b}).node

	const vol = "mock-pvc-1"
	pubCtx := map[string]string{PublishContextDevice: "/dev/mock/" + vol}
	const staging, target, target2 = "/var/lib/kubelet/staging/pvc-1", "/var/lib/kubelet/pods/p1/pvc-1", "/var/lib/kubelet/pods/p2/pvc-1"

	create := func(ctx context.Context) error {
		return errOf(ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
	}
	del := func(ctx context.Context) error {
		return errOf(ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol}))
	}
	attach := func(ctx context.Context) error {
		return errOf(ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: "n1", VolumeCapability: rwo}))
	}
	detach := func(ctx context.Context) error {
		return errOf(ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol, NodeId: "n1"}))
	}
	stage := func(n csi.NodeClient, path string, pc map[string]string, c *csi.VolumeCapability) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: path, PublishContext: pc, VolumeCapability: c}))
		}
	}
	unstage := func(path string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: path}))
		}
	}
	publish := func(stagingPath, tgt string, c *csi.VolumeCapability, ro bool) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: stagingPath, TargetPath: tgt, VolumeCapability: c, Readonly: ro, PublishContext: pubCtx}))
		}
	}
	unpublish := func(tgt string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: tgt}))
		}
	}
	stats := func(path string) func(context.Context) error {
		return func(ctx context.Context) error {
			resp, err := node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol, VolumePath: path})
			if err == nil && resp.GetUsage()[0].GetTotal() != DefaultVolumeSize {
				t.Errorf("stats total %d, want %d", resp.GetUsage()[0].GetTotal(), DefaultVolumeSize)
			}
			return err
		}
	}

	expand := func(path string, required int64, c *csi.VolumeCapability) func(context.Context) error {
		return func(ctx context.Context) error {
			resp, err := node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol, VolumePath: path, StagingTargetPath: staging,
				CapacityRange: &csi.CapacityRange{RequiredBytes: required}, VolumeCapability: c})
			if err == nil && resp.GetCapacityBytes() != DefaultVolumeSize {
				t.Errorf("NodeExpandVolume capacity %d, want the volume's %d", resp.GetCapacityBytes(), DefaultVolumeSize)
			}
			return err
		}
	}

	runSteps(t, []step{
		{"stage before the volume exists", stage(node, staging, pubCtx, rwo), codes.NotFound, "does not exist"},
		{"create", create, codes.OK, ""},
		{"stage before ControllerPublish", stage(node, staging, pubCtx, rwo), codes.FailedPrecondition, "not controller-published"},
		{"attach", attach, codes.OK, ""},
		{"stage without publish context", stage(node, staging, nil, rwo), codes.InvalidArgument, "publish_context"},
		{"stage without capability", stage(node, staging, pubCtx, nil), codes.InvalidArgument, "capability"},
		{"stage with relative path", stage(node, "rel", pubCtx, rwo), codes.InvalidArgument, "absolute"},
		{"publish before stage", publish(staging, target, rwo, false), codes.FailedPrecondition, "NodeStageVolume must succeed first"},
		{"publish without staging path", publish("", target, rwo, false), codes.FailedPrecondition, "staging target path not set"},
		{"stage", stage(node, staging, pubCtx, rwo), codes.OK, ""},
		{"stage again", stage(node, staging, pubCtx, rwo), codes.OK, ""},
		{"stage again, other mode", stage(node, staging, pubCtx, mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY)), codes.AlreadyExists, "already staged"},
		{"stage again, other path", stage(node, staging+"-2", pubCtx, rwo), codes.FailedPrecondition, "already staged at"},
		{"stage on a second node", stage(other, staging, pubCtx, rwo), codes.FailedPrecondition, "not controller-published to node n2"},
		{"publish at the wrong staging path", publish(staging+"-2", target, rwo, false), codes.FailedPrecondition, "not staged at"},
		{"publish", publish(staging, target, rwo, false), codes.OK, ""},
		{"publish again", publish(staging, target, rwo, false), codes.OK, ""},
		{"publish again, readonly", publish(staging, target, rwo, true), codes.AlreadyExists, "already published"},
		{"second target", publish(staging, target2, rwo, false), codes.OK, ""},
		{"single writer at a third target", publish(staging, target2+"-3", mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER), false), codes.FailedPrecondition, "single-writer"},
		{"stats at the target", stats(target), codes.OK, ""},
		{"stats at the staging path", stats(staging), codes.OK, ""},
		{"stats elsewhere", stats("/elsewhere"), codes.NotFound, "neither staged nor published"},
		{"expand at the target", expand(target, DefaultVolumeSize/2, rwo), codes.OK, ""},
		{"expand at the staging path", expand(staging, DefaultVolumeSize, nil), codes.OK, ""},
		{"expand elsewhere", expand("/elsewhere", DefaultVolumeSize, rwo), codes.NotFound, "neither staged nor published"},
		{"expand beyond the volume", expand(target, 2*DefaultVolumeSize, rwo), codes.OutOfRange, "ControllerExpandVolume must grow it first"},
		{"expand as block", expand(target, DefaultVolumeSize, blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)), codes.InvalidArgument, "mount access"},
		{"expand without a path", expand("", DefaultVolumeSize, rwo), codes.InvalidArgument, "volume path"},
		{"delete while in use", del, codes.FailedPrecondition, "controller-published"},
		{"unstage while published", unstage(staging), codes.FailedPrecondition, "still published"},
		{"unpublish", unpublish(target), codes.OK, ""},
		{"unpublish again", unpublish(target), codes.OK, ""},
		{"unpublish second target", unpublish(target2), codes.OK, ""},
		{"unstage another path", unstage(staging + "-2"), codes.OK, ""},
		{"unstage", unstage(staging), codes.OK, ""},
		{"unstage again", unstage(staging), codes.OK, ""},
		{"delete while attached", del, codes.FailedPrecondition, "controller-published to [n1]"},
		{"detach", detach, codes.OK, ""},
		{"delete", del, codes.OK, ""},
		{"delete again", del, codes.OK, ""},
	})
	if vs := b.Volumes(); len(vs) != 0 {
		t.Fatalf("volumes left: %+v", vs)
	}
}

// TestPrivateBackends covers drivers that share nothing, as in separate
// processes: the node cannot know the volumes and the controller cannot
// know the nodes, so neither refuses what it cannot check.
func TestPrivateBackends(t *testing.T) {
	dir := socketDir(t)
	ctrl := serve(t, dir, Config{Mode: ModeController, MaxVolumesPerNode: 1}).ctrl
	node := serve(t, dir, Config{Mode: ModeNode, NodeID: "n1"}).node
	ctx := ctxT(t)
	for _, name := range []string{"a", "b"} {
		if _, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{rwo}}); err != nil {
			t.Fatal(err)
		}
	}
	runSteps(t, []step{
		{"publish to a node nobody registered", func(ctx context.Context) error {
			return errOf(ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "mock-a", NodeId: "anywhere", VolumeCapability: rwo}))
		}, codes.OK, ""},
		{"the controller's own limit applies", func(ctx context.Context) error {
			return errOf(ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "mock-b", NodeId: "anywhere", VolumeCapability: rwo}))
		}, codes.ResourceExhausted, "maximum of 1"},
		{"stage a volume the node cannot know", func(ctx context.Context) error {
			return errOf(node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "whatever", StagingTargetPath: "/s", VolumeCapability: rwo}))
		}, codes.OK, ""},
		{"publish it", func(ctx context.Context) error {
			return errOf(node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "whatever", StagingTargetPath: "/s", TargetPath: "/t", VolumeCapability: rwo}))
		}, codes.OK, ""},
		{"stats without a size", func(ctx context.Context) error {
			resp, err := node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "whatever", VolumePath: "/t"})
			if err == nil && resp.GetUsage()[0].GetTotal() != 0 {
				t.Errorf("total %d for an unknown volume", resp.GetUsage()[0].GetTotal())
			}
			return err
		}, codes.OK, ""},
	})
}

// TestWithoutStageAndAttach covers a driver without STAGE_UNSTAGE_VOLUME
// and PUBLISH_UNPUBLISH_VOLUME: NodePublishVolume is the only step.
func TestWithoutStageAndAttach(t *testing.T) {
	dir := socketDir(t)
	b := NewBackend(0)
	c := serve(t, dir, Config{NodeID: "n1", Backend: b, NoStageUnstage: true, NoAttach: true})
	n2 := serve(t, dir, Config{Mode: ModeNode, NodeID: "n2", Backend: b, NoStageUnstage: true}).node
	ctx := ctxT(t)
	if _, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{rwo}}); err != nil {
		t.Fatal(err)
	}
	publish := func(n csi.NodeClient, tgt string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "mock-a", TargetPath: tgt, VolumeCapability: rwo}))
		}
	}
	runSteps(t, []step{
		{"ControllerPublish is not offered", func(ctx context.Context) error {
			return errOf(c.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "mock-a", NodeId: "n1", VolumeCapability: rwo}))
		}, codes.Unimplemented, "PUBLISH_UNPUBLISH_VOLUME"},
		{"NodeStage is not offered", func(ctx context.Context) error {
			return errOf(c.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "mock-a", StagingTargetPath: "/s", VolumeCapability: rwo}))
		}, codes.Unimplemented, "STAGE_UNSTAGE_VOLUME"},
		{"publish without staging", publish(c.node, "/t1"), codes.OK, ""},
		{"single-node volume on a second node", publish(n2, "/t2"), codes.FailedPrecondition, "in use on node n1"},
		{"delete while published", func(ctx context.Context) error {
			return errOf(c.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "mock-a"}))
		}, codes.FailedPrecondition, "published on node n1"},
	})
}

func TestListVolumesPages(t *testing.T) {
	c := serve(t, socketDir(t), Config{NodeID: "n1"})
	ctx := ctxT(t)
	for _, name := range []string{"c", "a", "b", "e", "d"} {
		if _, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{rwo}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		token     string
		max       int32
		wantIDs   string
		wantToken string
		wantCode  codes.Code
	}{
		{name: "all", wantIDs: "mock-a,mock-b,mock-c,mock-d,mock-e"},
		{name: "first page", max: 2, wantIDs: "mock-a,mock-b", wantToken: "2"},
		{name: "middle page", token: "2", max: 2, wantIDs: "mock-c,mock-d", wantToken: "4"},
		{name: "last page", token: "4", max: 2, wantIDs: "mock-e"},
		{name: "past the end", token: "5"},
		{name: "bad token", token: "x", wantCode: codes.Aborted},
		{name: "token too far", token: "6", wantCode: codes.Aborted},
		{name: "negative max", max: -1, wantCode: codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: tc.token, MaxEntries: tc.max})
			if status.Code(err) != tc.wantCode {
				t.Fatalf("got %v, want %v", err, tc.wantCode)
			}
			var ids []string
			for _, e := range resp.GetEntries() {
				ids = append(ids, e.GetVolume().GetVolumeId())
			}
			if strings.Join(ids, ",") != tc.wantIDs || resp.GetNextToken() != tc.wantToken {
				t.Fatalf("got %v next %q, want %s next %q", ids, resp.GetNextToken(), tc.wantIDs, tc.wantToken)
			}
		})
	}
}

func TestValidateGetVolumeAndCapacity(t *testing.T) {
	c := serve(t, socketDir(t), Config{NodeID: "n1", Capacity: 4 << 30})
	ctx := ctxT(t)
	if _, err := c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "a", VolumeCapabilities: []*csi.VolumeCapability{rwo}}); err != nil {
		t.Fatal(err)
	}
	validate := func(id string, caps ...*csi.VolumeCapability) (*csi.ValidateVolumeCapabilitiesResponse, error) {
		return c.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: caps})
	}
	for _, tc := range []struct {
		name          string
		id            string
		caps          []*csi.VolumeCapability
		wantCode      codes.Code
		wantConfirmed bool
	}{
		{"confirmed", "mock-a", []*csi.VolumeCapability{rwo, rwx}, codes.OK, true},
		{"block on a mount volume", "mock-a", []*csi.VolumeCapability{blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, codes.OK, false},
		{"no mode", "mock-a", []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}}, codes.OK, false},
		{"unknown volume", "mock-zz", []*csi.VolumeCapability{rwo}, codes.NotFound, false},
		{"no capabilities", "mock-a", nil, codes.InvalidArgument, false},
		{"no volume ID", "", []*csi.VolumeCapability{rwo}, codes.InvalidArgument, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := validate(tc.id, tc.caps...)
			if status.Code(err) != tc.wantCode || (resp.GetConfirmed() != nil) != tc.wantConfirmed {
				t.Fatalf("got %v, %v; want %v, confirmed %t", resp, err, tc.wantCode, tc.wantConfirmed)
			}
			if err == nil && !tc.wantConfirmed && resp.GetMessage() == "" {
				t.Fatal("unconfirmed without a message")
			}
		})
	}
	if _, err := c.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "mock-a", NodeId: "n1", VolumeCapability: rwo}); err != nil {
		t.Fatal(err)
	}
	gv, err := c.ctrl.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: "mock-a"})
	if err != nil || strings.Join(gv.GetStatus().GetPublishedNodeIds(), ",") != "n1" {
		t.Fatalf("ControllerGetVolume: %v, %v", gv, err)
	}
	if _, err := c.ctrl.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: "mock-zz"}); status.Code(err) != codes.NotFound {
		t.Fatalf("ControllerGetVolume of a missing volume: %v", err)
	}
	gc, err := c.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{})
	if err != nil || gc.GetAvailableCapacity() != 3<<30 {
		t.Fatalf("GetCapacity: %v, %v; want %d available", gc, err, 3<<30)
	}
	unlimited := serve(t, socketDir(t), Config{NodeID: "n2"})
	if _, err := unlimited.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetCapacity without a limit: %v", err)
	}
}

func TestLatency(t *testing.T) {
	c := serve(t, socketDir(t), Config{
		NodeID:         "n1",
		Latency:        map[string]time.Duration{"CreateVolume": 600 * time.Millisecond, "/csi.v1.Identity/Probe": 0},
		DefaultLatency: 300 * time.Millisecond,
	})
	timed := func(call func(context.Context) error, timeout time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		err := call(ctx)
		return time.Since(start), err
	}
	create := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(c.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
		}
	}
	probe := func(ctx context.Context) error { return errOf(c.id.Probe(ctx, &csi.ProbeRequest{})) }
	info := func(ctx context.Context) error { return errOf(c.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})) }

	for _, tc := range []struct {
		name     string
		setup    func() error
		call     func(context.Context) error
		timeout  time.Duration
		min, max time.Duration
		wantCode codes.Code
	}{
		// The bounds are wide apart so that a loaded machine does not
		// blur them.
		{name: "per method", call: create("a"), timeout: 5 * time.Second, min: 600 * time.Millisecond, max: 3 * time.Second},
		{name: "zero overrides the default", call: probe, timeout: 5 * time.Second, max: 200 * time.Millisecond},
		{name: "default", call: info, timeout: 5 * time.Second, min: 300 * time.Millisecond, max: 3 * time.Second},
		{name: "caller gives up first", call: create("b"), timeout: 50 * time.Millisecond, max: 450 * time.Millisecond, wantCode: codes.DeadlineExceeded},
		{name: "changed while running", setup: func() error { return c.d.SetLatency("CreateVolume", 0) }, call: create("c"), timeout: 5 * time.Second, max: 200 * time.Millisecond},
		{name: "default changed", setup: func() error { return c.d.SetLatency("*", 0) }, call: info, timeout: 5 * time.Second, max: 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				if err := tc.setup(); err != nil {
					t.Fatal(err)
				}
			}
			took, err := timed(tc.call, tc.timeout)
			if status.Code(err) != tc.wantCode {
				t.Fatalf("got %v, want %v", err, tc.wantCode)
			}
			if took < tc.min || took > tc.max {
				t.Fatalf("took %s, want %s..%s", took, tc.min, tc.max)
			}
		})
	}
	// The call the caller gave up on never took effect.
	if _, ok := c.d.Backend().Volume("mock-b"); ok {
		t.Fatal("volume b was created after its caller gave up")
	}
	if err := c.d.SetLatency("NodeStage", time.Second); err == nil {
		t.Fatal("SetLatency accepted a method that does not exist")
	}
	if err := c.d.SetLatency("CreateVolume", -time.Second); err == nil {
		t.Fatal("SetLatency accepted a negative latency")
	}
}

func TestServeUntilContextEnds(t *testing.T) {
	d, err := New(Config{NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(socketDir(t), "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, sock) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("socket never appeared")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A second driver cannot take a live socket.
	if _, err := d.Start(sock); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Start on a live socket: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// TestDetachFromALostNode: a node that dies never unstages. The force
// detach (ControllerUnpublishVolume for that node) takes the volume away
// from it, and another node may then use a single-node volume.
func TestDetachFromALostNode(t *testing.T) {
	b := NewBackend(0)
	dir := socketDir(t)
	ctrl := serve(t, dir, Config{Mode: ModeController, Backend: b}).ctrl
	lost := serve(t, dir, Config{Mode: ModeNode, NodeID: "n1", Backend: b}).node
	next := serve(t, dir, Config{Mode: ModeNode, NodeID: "n2", Backend: b}).node

	const vol, staging = "mock-pvc-1", "/var/lib/kubelet/staging/pvc-1"
	attach := func(node string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: node, VolumeCapability: rwo}))
		}
	}
	stage := func(n csi.NodeClient) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
				PublishContext: map[string]string{PublishContextDevice: "/dev/mock/" + vol}, VolumeCapability: rwo}))
		}
	}
	runSteps(t, []step{
		{"create", func(ctx context.Context) error {
			return errOf(ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
		}, codes.OK, ""},
		{"attach to n1", attach("n1"), codes.OK, ""},
		{"stage on n1", stage(lost), codes.OK, ""},
		{"attach to n2 while on n1", attach("n2"), codes.FailedPrecondition, "published to node n1"},
		{"force detach from n1, which never unstaged", func(ctx context.Context) error {
			return errOf(ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol, NodeId: "n1"}))
		}, codes.OK, ""},
		{"attach to n2", attach("n2"), codes.OK, ""},
		{"stage on n2", stage(next), codes.OK, ""},
	})
}
