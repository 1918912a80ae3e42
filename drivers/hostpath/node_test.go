package hostpath

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// mountEntries returns the /proc/self/mountinfo entries for exactly path.
func mountEntries(t *testing.T, path string) []*mountinfo.Info {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

func wantMounted(t *testing.T, path string, want bool) {
	t.Helper()
	if got := len(mountEntries(t, path)) > 0; got != want {
		t.Fatalf("%s mounted = %v, want %v", path, got, want)
	}
}

// lifecycle holds the paths of one volume on one node.
type lifecycle struct {
	r       *running
	id      string
	staging string
	target  string
}

func newLifecycle(t *testing.T, env *testEnv, r *running, name string) *lifecycle {
	t.Helper()
	resp, err := r.ctrl.CreateVolume(context.Background(), createReq(name, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return &lifecycle{
		r:       r,
		id:      resp.GetVolume().GetVolumeId(),
		staging: filepath.Join(env.dir, "kubelet", name, "globalmount"),
		target:  filepath.Join(env.dir, "kubelet", "pods", name, "mount"),
	}
}

func (l *lifecycle) stage() error {
	_, err := l.r.node.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: l.id, StagingTargetPath: l.staging, VolumeCapability: rwo})
	return err
}

func (l *lifecycle) publish(target string, readonly bool) error {
	_, err := l.r.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: l.id, StagingTargetPath: l.staging, TargetPath: target, VolumeCapability: rwo, Readonly: readonly,
	})
	return err
}

func (l *lifecycle) unpublish(target string) error {
	_, err := l.r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: l.id, TargetPath: target})
	return err
}

func (l *lifecycle) unstage() error {
	_, err := l.r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: l.id, StagingTargetPath: l.staging})
	return err
}

func TestNodeLifecycle(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	l := newLifecycle(t, env, r, "pvc-life")
	volDir := filepath.Join(env.root, "volumes", l.id)

	for i := range 2 { // the second round checks idempotency
		if err := l.stage(); err != nil {
			t.Fatalf("NodeStageVolume #%d: %v", i+1, err)
		}
	}
	wantMounted(t, l.staging, true)
	if n := len(mountEntries(t, l.staging)); n != 1 {
		t.Fatalf("staging path mounted %d times, want once", n)
	}
	for i := range 2 {
		if err := l.publish(l.target, false); err != nil {
			t.Fatalf("NodePublishVolume #%d: %v", i+1, err)
		}
	}
	wantMounted(t, l.target, true)
	if n := len(mountEntries(t, l.target)); n != 1 {
		t.Fatalf("target mounted %d times, want once", n)
	}

	// A pod's write lands in the backend.
	if err := os.WriteFile(filepath.Join(l.target, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatalf("write through target: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(volDir, "hello.txt")); err != nil || string(got) != "hi" {
		t.Fatalf("backend file = %q, %v", got, err)
	}

	// Publishing again with other options is refused.
	wantCode(t, l.publish(l.target, true), codes.AlreadyExists)

	// A second, read-only target of the same volume.
	roTarget := l.target + "-ro"
	if err := l.publish(roTarget, true); err != nil {
		t.Fatalf("read-only NodePublishVolume: %v", err)
	}
	entries := mountEntries(t, roTarget)
	if len(entries) != 1 || !hasOption(entries[0].Options, "ro") {
		t.Fatalf("read-only target mount = %+v", entries)
	}
	if err := os.WriteFile(filepath.Join(roTarget, "x"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Fatalf("write to read-only target: %v, want EROFS", err)
	}
	if got, err := os.ReadFile(filepath.Join(roTarget, "hello.txt")); err != nil || string(got) != "hi" {
		t.Fatalf("read through read-only target = %q, %v", got, err)
	}

	stats, err := r.node.NodeGetVolumeStats(context.Background(), &csi.NodeGetVolumeStatsRequest{VolumeId: l.id, VolumePath: l.target})
	if err != nil {
		t.Fatalf("NodeGetVolumeStats: %v", err)
	}
	if len(stats.GetUsage()) != 2 || stats.GetUsage()[0].GetTotal() <= 0 {
		t.Fatalf("stats = %v", stats)
	}

	for _, target := range []string{l.target, roTarget} {
		for i := range 2 {
			if err := l.unpublish(target); err != nil {
				t.Fatalf("NodeUnpublishVolume %s #%d: %v", target, i+1, err)
			}
		}
		wantMounted(t, target, false)
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("target %s not removed: %v", target, err)
		}
	}
	for i := range 2 {
		if err := l.unstage(); err != nil {
			t.Fatalf("NodeUnstageVolume #%d: %v", i+1, err)
		}
	}
	wantMounted(t, l.staging, false)
	if got, err := os.ReadFile(filepath.Join(volDir, "hello.txt")); err != nil || string(got) != "hi" {
		t.Fatalf("data lost after unstage: %q, %v", got, err)
	}
}

func hasOption(opts, want string) bool {
	return slices.Contains(strings.Split(opts, ","), want)
}

func TestNodePublishNeedsStage(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	l := newLifecycle(t, env, r, "pvc-unstaged")

	wantCode(t, l.publish(l.target, false), codes.FailedPrecondition)
	wantMounted(t, l.target, false)

	// Staged elsewhere is not staged here.
	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	other := *l
	other.staging = l.staging + "-other"
	wantCode(t, other.publish(l.target, false), codes.FailedPrecondition)
	// Nor may the volume be staged at a second path at the same time.
	wantCode(t, other.stage(), codes.FailedPrecondition)

	// Once the staging mount is gone (say, the node rebooted), publishing
	// must not pretend.
	if err := unix.Unmount(l.staging, 0); err != nil {
		t.Fatal(err)
	}
	wantCode(t, l.publish(l.target, false), codes.FailedPrecondition)
	// ... and staging again repairs it.
	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	if err := l.publish(l.target, false); err != nil {
		t.Fatalf("publish after re-stage: %v", err)
	}
}

func TestNodeRequestValidation(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	abs := filepath.Join(env.dir, "p")
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"stage without volume id", func() error {
			_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{StagingTargetPath: abs, VolumeCapability: rwo})
			return err
		}, codes.InvalidArgument},
		{"stage without staging path", func() error {
			_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-x", VolumeCapability: rwo})
			return err
		}, codes.InvalidArgument},
		{"stage with relative staging path", func() error {
			_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-x", StagingTargetPath: "rel", VolumeCapability: rwo})
			return err
		}, codes.InvalidArgument},
		{"stage without capability", func() error {
			_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-x", StagingTargetPath: abs})
			return err
		}, codes.InvalidArgument},
		{"stage unknown volume", func() error {
			_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-x", StagingTargetPath: abs, VolumeCapability: rwo})
			return err
		}, codes.NotFound},
		{"publish without target", func() error {
			_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-x", StagingTargetPath: abs, VolumeCapability: rwo})
			return err
		}, codes.InvalidArgument},
		{"publish without capability", func() error {
			_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-x", TargetPath: abs})
			return err
		}, codes.InvalidArgument},
		{"publish without staging path", func() error {
			_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-x", TargetPath: abs, VolumeCapability: rwo})
			return err
		}, codes.InvalidArgument},
		{"publish unknown volume", func() error {
			_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-x", TargetPath: abs, StagingTargetPath: abs + "s", VolumeCapability: rwo})
			return err
		}, codes.NotFound},
		{"unpublish without target", func() error {
			_, err := r.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-x"})
			return err
		}, codes.InvalidArgument},
		{"unpublish never published", func() error {
			_, err := r.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-x", TargetPath: abs})
			return err
		}, codes.OK},
		{"unstage never staged", func() error {
			_, err := r.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-x", StagingTargetPath: abs})
			return err
		}, codes.OK},
		{"stats without path", func() error {
			_, err := r.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-x"})
			return err
		}, codes.InvalidArgument},
		{"stats unknown volume", func() error {
			_, err := r.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-x", VolumePath: "some/path"})
			return err
		}, codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(), tc.want)
		})
	}
}

func TestNodeGetVolumeStatsNeedsMountOfVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	a := newLifecycle(t, env, r, "pvc-a")
	b := newLifecycle(t, env, r, "pvc-b")
	for _, l := range []*lifecycle{a, b} {
		if err := l.stage(); err != nil {
			t.Fatal(err)
		}
		if err := l.publish(l.target, false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	tests := []struct {
		name string
		id   string
		path string
		want codes.Code
	}{
		{"own target", a.id, a.target, codes.OK},
		{"own staging path", a.id, a.staging, codes.OK},
		{"another volume's target", a.id, b.target, codes.NotFound},
		{"plain directory", a.id, env.dir, codes.NotFound},
		{"missing path", a.id, filepath.Join(env.dir, "nope"), codes.NotFound},
		{"relative path", a.id, "some/path", codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: tc.id, VolumePath: tc.path})
			wantCode(t, err, tc.want)
		})
	}
}

func TestNodeGetInfo(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeNode, NodeID: "worker-7", MaxVolumesPerNode: 4})
	info, err := r.node.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetNodeId() != "worker-7" || info.GetMaxVolumesPerNode() != 4 ||
		info.GetAccessibleTopology().GetSegments()[TopologyKeyNode] != "worker-7" {
		t.Fatalf("NodeGetInfo = %v", info)
	}
	caps, err := r.node.NodeGetCapabilities(context.Background(), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[csi.NodeServiceCapability_RPC_Type]bool{}
	for _, c := range caps.GetCapabilities() {
		got[c.GetRpc().GetType()] = true
	}
	if !got[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] || !got[csi.NodeServiceCapability_RPC_GET_VOLUME_STATS] {
		t.Fatalf("node capabilities = %v", caps)
	}
	// A node plugin makes its node known to the controller.
	if _, ok, err := lookupNode(env.root, "worker-7"); err != nil || !ok {
		t.Fatalf("node not registered in the backend: %v", err)
	}
}

// The plugin never unmounts or mounts over what is not its volume.
func TestNodeLeavesForeignMountsAlone(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	l := newLifecycle(t, env, r, "pvc-own")
	foreign := filepath.Join(env.dir, "foreign")
	busy := filepath.Join(env.dir, "busy")
	for _, d := range []string{foreign, busy} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(foreign, busy, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}

	wantCode(t, l.unpublish(busy), codes.FailedPrecondition)
	_, err := r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: l.id, StagingTargetPath: busy})
	wantCode(t, err, codes.FailedPrecondition)
	onBusy := *l
	onBusy.staging = busy
	wantCode(t, onBusy.stage(), codes.AlreadyExists)

	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, l.publish(busy, false), codes.AlreadyExists)
	if n := len(mountEntries(t, busy)); n != 1 {
		t.Fatalf("foreign mount point now has %d mounts, want 1", n)
	}
}

// TestDeleteVolumeRefusedWhileMounted: a directory volume still staged, or
// only published, on a node is in use, though never controller-published
// (attachRequired: false): DeleteVolume answers FailedPrecondition until
// the node has unmounted it, then deletes it.
func TestDeleteVolumeRefusedWhileMounted(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	l := newLifecycle(t, env, r, "pvc-in-use")
	ctx := context.Background()
	del := func() error {
		_, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: l.id})
		return err
	}
	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	if err := l.publish(l.target, false); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name   string
		before func() error
		code   codes.Code
	}{
		{"staged and published", func() error { return nil }, codes.FailedPrecondition},
		{"staged", func() error { return l.unpublish(l.target) }, codes.FailedPrecondition},
		{"unstaged", l.unstage, codes.OK},
	} {
		if err := step.before(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := status.Code(del()); got != step.code {
			t.Errorf("DeleteVolume of a volume %s: %s, want %s", step.name, got, step.code)
		}
	}
	if _, err := os.Stat(filepath.Join(env.root, "volumes", l.id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volume directory after the delete: %v, want gone", err)
	}
}
