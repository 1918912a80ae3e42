package hostpath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/runroot"
)

// testEnv is a directory for one test: a shared backend root plus room for
// sockets, state and mount targets. Whatever the test mounts below it is
// unmounted, and every loop device backed by a file below it detached, when
// the test ends, pass or fail.
type testEnv struct {
	dir  string
	root string
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the driver mounts volumes and attaches loop devices")
	}
	rr, err := runroot.New("hostpath-test")
	if err != nil {
		t.Fatal(err)
	}
	dir := rr.Path()
	// Registered first, so it runs last: after the drivers have stopped.
	t.Cleanup(func() {
		if err := rr.Close(); err != nil {
			t.Errorf("clean up test directory: %v", err)
		}
		if dev, err := loopBelow(dir); err != nil || dev != "" {
			t.Errorf("loop device %s still attached below %s (%v)", dev, dir, err)
		}
	})
	return &testEnv{dir: dir, root: filepath.Join(dir, "backend")}
}

// loopBelow returns a loop device whose backing file lies below dir, if
// any is attached.
func loopBelow(dir string) (string, error) {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		backing, err := loopBackingFile(e.Name())
		if err != nil {
			return "", err
		}
		if backing != "" && strings.HasPrefix(backing, dir+"/") {
			return "/dev/" + e.Name(), nil
		}
	}
	return "", nil
}

// running is a driver served in-process, and a client connected to it.
type running struct {
	d      *Driver
	socket string
	id     csi.IdentityClient
	ctrl   csi.ControllerClient
	group  csi.GroupControllerClient
	node   csi.NodeClient
	stop   func()
}

// start serves a driver configured by cfg; empty Root, Endpoint and (for
// node modes) NodeID are filled in from env, and a nil Log logs to the test.
// The driver stops when the test ends, or earlier through stop.
func (env *testEnv) start(t testing.TB, cfg Config) *running {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = env.root
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeAll
	}
	if cfg.NodeID == "" && cfg.Mode.servesNode() {
		cfg.NodeID = "node-1"
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "unix://" + filepath.Join(env.dir, string(cfg.Mode)+"-"+cfg.NodeID+".sock")
	}
	if cfg.Log == nil {
		cfg.Log = testLog{t}
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	conn, err := grpc.NewClient("unix://"+d.socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The first dial may beat Run to the socket; retry quickly
		// instead of backing off for a second.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.5, MaxDelay: 100 * time.Millisecond}}))
	if err != nil {
		cancel()
		t.Fatalf("grpc client: %v", err)
	}
	var once sync.Once
	r := &running{
		d:      d,
		socket: d.socket,
		id:     csi.NewIdentityClient(conn),
		ctrl:   csi.NewControllerClient(conn),
		group:  csi.NewGroupControllerClient(conn),
		node:   csi.NewNodeClient(conn),
	}
	r.stop = func() {
		once.Do(func() {
			conn.Close()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("driver did not stop")
			}
		})
	}
	t.Cleanup(r.stop)
	waitProbe(t, r.id)
	return r
}

func waitProbe(t testing.TB, id csi.IdentityClient) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := id.Probe(ctx, &csi.ProbeRequest{})
		cancel()
		if err == nil && resp.GetReady().GetValue() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("driver not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLog sends driver log lines to the test log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func wantCode(t testing.TB, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("got code %v (%v), want %v", got, err, want)
	}
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var rwo = mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)

func TestIdentity(t *testing.T) {
	env := newTestEnv(t)
	tests := []struct {
		mode           Mode
		wantController bool
	}{
		{ModeAll, true},
		{ModeController, true},
		{ModeNode, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			r := env.start(t, Config{Mode: tc.mode, DriverName: "test.csisim.io"})
			ctx := context.Background()
			info, err := r.id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if info.GetName() != "test.csisim.io" || info.GetVendorVersion() != VendorVersion {
				t.Fatalf("GetPluginInfo = %v", info)
			}
			caps, err := r.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			gotController := false
			for _, c := range caps.GetCapabilities() {
				if c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE {
					gotController = true
				}
			}
			if gotController != tc.wantController {
				t.Fatalf("CONTROLLER_SERVICE advertised = %v, want %v", gotController, tc.wantController)
			}
		})
	}
}

func TestModeRefusesOtherService(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()

	node := env.start(t, Config{Mode: ModeNode})
	_, err := node.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "x", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
	wantCode(t, err, codes.Unimplemented)
	_, err = node.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	wantCode(t, err, codes.Unimplemented)
	if _, err := node.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
		t.Fatalf("node mode NodeGetInfo: %v", err)
	}

	ctrl := env.start(t, Config{Mode: ModeController})
	_, err = ctrl.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	wantCode(t, err, codes.Unimplemented)
	if _, err := ctrl.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); err != nil {
		t.Fatalf("controller mode ControllerGetCapabilities: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	sock := "unix://" + filepath.Join(dir, "csi.sock")
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no endpoint", Config{Root: dir, NodeID: "n"}},
		{"tcp endpoint", Config{Endpoint: "tcp://127.0.0.1:1", Root: dir, NodeID: "n"}},
		{"relative socket", Config{Endpoint: "unix://rel/csi.sock", Root: dir, NodeID: "n"}},
		{"no root", Config{Endpoint: sock, NodeID: "n"}},
		{"node mode without node id", Config{Endpoint: sock, Root: dir, Mode: ModeNode}},
		{"node id with slash", Config{Endpoint: sock, Root: dir, NodeID: "a/b"}},
		{"unknown mode", Config{Endpoint: sock, Root: dir, NodeID: "n", Mode: "both"}},
		{"negative max volumes", Config{Endpoint: sock, Root: dir, NodeID: "n", MaxVolumesPerNode: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil {
				t.Fatalf("New(%+v) succeeded", tc.cfg)
			}
		})
	}
}

func TestDefaultStateDir(t *testing.T) {
	tests := []struct {
		root   string
		mode   Mode
		nodeID string
		want   string
	}{
		{"/run/x/backend", ModeController, "", "/run/x/state/controller"},
		{"/run/x/backend/", ModeNode, "n1", "/run/x/state/n1"},
		{"/run/x/backend", ModeAll, "n1", "/run/x/state/n1"},
		{"/run/x/backend", ModeController, "n1", "/run/x/state/controller"},
	}
	for _, tc := range tests {
		if got := DefaultStateDir(tc.root, tc.mode, tc.nodeID); got != tc.want {
			t.Errorf("DefaultStateDir(%q, %s, %q) = %q, want %q", tc.root, tc.mode, tc.nodeID, got, tc.want)
		}
	}
}

func TestRunReplacesStaleSocketButNotLiveOne(t *testing.T) {
	env := newTestEnv(t)
	sock := filepath.Join(env.dir, "stale.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	lis.Close() // leaves the socket file behind, as a crashed driver would

	r := env.start(t, Config{Endpoint: "unix://" + sock})

	// A second driver on the same, now live, socket must not steal it.
	d, err := New(Config{Endpoint: "unix://" + sock, Root: env.root, NodeID: "node-2", Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Run on a live socket: %v, want an 'in use' error", err)
	}

	r.stop()
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left after stop: %v", err)
	}
}

// Every RPC that takes a volume or snapshot ID refuses one that would leave
// the root, or name anything but a single entry in it.
func TestPathEscapeRefused(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	target := filepath.Join(env.dir, "target")
	staging := filepath.Join(env.dir, "staging")

	calls := map[string]func(id string) error{
		"DeleteVolume": func(id string) error {
			_, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
			return err
		},
		"ControllerPublishVolume": func(id string) error {
			_, err := r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "node-1", VolumeCapability: rwo})
			return err
		},
		"ControllerUnpublishVolume": func(id string) error {
			_, err := r.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: "node-1"})
			return err
		},
		"ValidateVolumeCapabilities": func(id string) error {
			_, err := r.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{rwo}})
			return err
		},
		"NodeStageVolume": func(id string) error {
			_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: rwo})
			return err
		},
		"NodeUnstageVolume": func(id string) error {
			_, err := r.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
			return err
		},
		"NodePublishVolume": func(id string) error {
			_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: rwo})
			return err
		},
		"NodeUnpublishVolume": func(id string) error {
			_, err := r.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
			return err
		},
		"NodeGetVolumeStats": func(id string) error {
			_, err := r.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
			return err
		},
		"NodeExpandVolume": func(id string) error {
			_, err := r.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target})
			return err
		},
		"ControllerExpandVolume": func(id string) error {
			_, err := r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 1}})
			return err
		},
		"CreateSnapshot": func(id string) error {
			_, err := r.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: id})
			return err
		},
		"DeleteSnapshot": func(id string) error {
			_, err := r.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
			return err
		},
		"GetSnapshot": func(id string) error {
			_, err := r.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: id})
			return err
		},
		"CreateVolume from snapshot": func(id string) error {
			req := createReq("restore", 0, 0)
			req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
			_, err := r.ctrl.CreateVolume(ctx, req)
			return err
		},
		"CreateVolume from volume": func(id string) error {
			req := createReq("clone", 0, 0)
			req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
			_, err := r.ctrl.CreateVolume(ctx, req)
			return err
		},
	}
	badIDs := []string{"..", "../../etc", "vol/../../x", "a/b", "/etc", "vol-\x00", "VOL-1", "vol_1", strings.Repeat("a", 129)}

	// A directory next to the backend that an escape would reach.
	victim := filepath.Join(env.dir, "victim")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, call := range calls {
		for _, id := range badIDs {
			t.Run(fmt.Sprintf("%s/%q", name, id), func(t *testing.T) {
				wantCode(t, call(id), codes.InvalidArgument)
			})
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("directory outside the backend was touched: %v", err)
	}
	for _, dir := range []string{"volumes", "snapshots"} {
		if entries, err := os.ReadDir(filepath.Join(env.root, dir)); err != nil || len(entries) != 0 {
			t.Errorf("refused calls left %v in %s (%v)", entries, dir, err)
		}
	}
	for _, p := range []string{target, staging} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created by a refused call", p)
		}
	}
}

// TestStopKeepsASuccessorsSocket: a plugin that stops after another one
// took over its socket path (a restarted pod) leaves the new socket alone.
func TestStopKeepsASuccessorsSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "csi.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	made, _ := os.Stat(path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("successor"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := made.ModTime().Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	removeIfSame(path, made)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the successor's socket was removed: %v", err)
	}
	mine, _ := os.Stat(path)
	removeIfSame(path, mine)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("our own socket was not removed: %v", err)
	}
}
