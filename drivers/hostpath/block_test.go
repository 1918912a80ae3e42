package hostpath

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	utilexec "k8s.io/utils/exec"
)

func blockCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var rwoBlock = blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)

var blockParams = map[string]string{ParameterKind: string(kindBlock)}

// blockVolume is one block volume on node-1 of a ModeAll driver, with the
// paths a CO would use for it.
type blockVolume struct {
	t       *testing.T
	r       *running
	id      string
	cap     *csi.VolumeCapability
	staging string
	target  string
	pubCtx  map[string]string
}

func newBlockVolume(t *testing.T, env *testEnv, r *running, name string, size int64, c *csi.VolumeCapability) *blockVolume {
	t.Helper()
	resp, err := r.ctrl.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name, Parameters: blockParams, VolumeCapabilities: []*csi.VolumeCapability{c},
		CapacityRange: &csi.CapacityRange{RequiredBytes: size},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &blockVolume{
		t: t, r: r, id: resp.GetVolume().GetVolumeId(), cap: c,
		staging: filepath.Join(env.dir, "kubelet", name, "globalmount"),
		target:  filepath.Join(env.dir, "kubelet", "pods", name, "target"),
	}
}

func (b *blockVolume) image(env *testEnv) string {
	return filepath.Join(env.root, "volumes", b.id+".img")
}

func (b *blockVolume) controllerPublish() error {
	resp, err := b.r.ctrl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: b.id, NodeId: "node-1", VolumeCapability: b.cap})
	if err == nil {
		b.pubCtx = resp.GetPublishContext()
	}
	return err
}

func (b *blockVolume) controllerUnpublish() error {
	_, err := b.r.ctrl.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: b.id, NodeId: "node-1"})
	return err
}

func (b *blockVolume) stage() error {
	_, err := b.r.node.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: b.id, StagingTargetPath: b.staging, VolumeCapability: b.cap, PublishContext: b.pubCtx,
	})
	return err
}

func (b *blockVolume) unstage() error {
	_, err := b.r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: b.id, StagingTargetPath: b.staging})
	return err
}

func (b *blockVolume) publish() error {
	_, err := b.r.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: b.id, StagingTargetPath: b.staging, TargetPath: b.target, VolumeCapability: b.cap, PublishContext: b.pubCtx,
	})
	return err
}

func (b *blockVolume) unpublish() error {
	_, err := b.r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: b.id, TargetPath: b.target})
	return err
}

// up runs ControllerPublish, NodeStage and NodePublish, each twice to check
// that repeating them is harmless.
func (b *blockVolume) up() {
	b.t.Helper()
	for _, step := range []struct {
		name string
		call func() error
	}{{"ControllerPublishVolume", b.controllerPublish}, {"NodeStageVolume", b.stage}, {"NodePublishVolume", b.publish}} {
		for i := range 2 {
			if err := step.call(); err != nil {
				b.t.Fatalf("%s #%d: %v", step.name, i+1, err)
			}
		}
	}
}

// down undoes up, each step twice.
func (b *blockVolume) down() {
	b.t.Helper()
	for _, step := range []struct {
		name string
		call func() error
	}{{"NodeUnpublishVolume", b.unpublish}, {"NodeUnstageVolume", b.unstage}, {"ControllerUnpublishVolume", b.controllerUnpublish}} {
		for i := range 2 {
			if err := step.call(); err != nil {
				b.t.Fatalf("%s #%d: %v", step.name, i+1, err)
			}
		}
	}
}

func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestBlockVolumeMountLifecycle(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	b := newBlockVolume(t, env, r, "pvc-blk", 64*mib, rwo)

	fi, err := os.Stat(b.image(env))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 64*mib || allocatedBytes(t, b.image(env)) > mib {
		t.Fatalf("image: size %d, allocated %d; want a sparse 64 MiB file", fi.Size(), allocatedBytes(t, b.image(env)))
	}

	// The node cannot stage a block volume that was not attached.
	wantCode(t, b.stage(), codes.FailedPrecondition)

	b.up()
	dev := b.pubCtx[PublishContextDevicePath]
	if found, err := findLoop(b.image(env)); err != nil || found != dev || dev == "" {
		t.Fatalf("publish context device %q, kernel says %q (%v)", dev, found, err)
	}
	entries := mountEntries(t, b.staging)
	if len(entries) != 1 || entries[0].FSType != "ext4" || entries[0].Source != dev {
		t.Fatalf("staging mounts = %+v, want one ext4 mount of %s", entries, dev)
	}
	if n := len(mountEntries(t, b.target)); n != 1 {
		t.Fatalf("target mounted %d times, want once", n)
	}
	if err := os.WriteFile(filepath.Join(b.target, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatalf("write through target: %v", err)
	}

	stats, err := r.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: b.id, VolumePath: b.target})
	if err != nil {
		t.Fatal(err)
	}
	if u := stats.GetUsage(); len(u) != 2 || u[0].GetTotal() < 50*mib || u[0].GetTotal() > 64*mib || u[1].GetUnit() != csi.VolumeUsage_INODES || u[1].GetTotal() == 0 {
		t.Fatalf("stats = %v", stats)
	}

	// Detaching a device with a mounted file system is refused.
	wantCode(t, b.controllerUnpublish(), codes.FailedPrecondition)
	if found, _ := findLoop(b.image(env)); found != dev {
		t.Fatalf("device detached by a refused unpublish")
	}
	_, err = r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: b.id})
	wantCode(t, err, codes.FailedPrecondition)

	b.down()
	if found, err := findLoop(b.image(env)); err != nil || found != "" {
		t.Fatalf("loop device %q still attached after ControllerUnpublishVolume (%v)", found, err)
	}

	// Attached again (maybe to another device), the file system and its
	// data are still there: no second mkfs.
	b.up()
	if got, err := os.ReadFile(filepath.Join(b.target, "hello.txt")); err != nil || string(got) != "hi" {
		t.Fatalf("data after re-attach = %q, %v", got, err)
	}
	b.down()

	if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: b.id}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.image(env)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("image left after DeleteVolume: %v", err)
	}
}

func TestBlockAccessType(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	b := newBlockVolume(t, env, r, "pvc-raw", 16*mib, rwoBlock)
	b.up()

	dev := b.pubCtx[PublishContextDevicePath]
	if m, err := mountinfo.Mounted(b.staging); err != nil || m {
		t.Fatalf("staging path of a block-access volume is mounted: %v, %v", m, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(b.target, &st); err != nil {
		t.Fatal(err)
	}
	rdev, err := deviceRdev(dev)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != rdev {
		t.Fatalf("target is not the loop device %s: mode %o rdev %d", dev, st.Mode, st.Rdev)
	}

	// A pod writes to the device; the bytes land in the image.
	f, err := os.OpenFile(b.target, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("raw bytes"), 4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	img, err := os.Open(b.image(env))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 9)
	if _, err := img.ReadAt(got, 4096); err != nil || string(got) != "raw bytes" {
		t.Fatalf("image holds %q (%v)", got, err)
	}
	img.Close()

	stats, err := r.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: b.id, VolumePath: b.target})
	if err != nil {
		t.Fatal(err)
	}
	if u := stats.GetUsage(); len(u) != 1 || u[0].GetUnit() != csi.VolumeUsage_BYTES || u[0].GetTotal() != 16*mib {
		t.Fatalf("stats = %v, want the device size only", stats)
	}

	// Published for block access, it cannot be published as a file system.
	other := *b
	other.cap, other.target = rwo, b.target+"-fs"
	wantCode(t, other.publish(), codes.FailedPrecondition)

	b.down()
	if _, err := os.Stat(b.target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("target file left after NodeUnpublishVolume: %v", err)
	}
	// Nothing was formatted: block access leaves the bytes alone.
	if _, isExt, err := readExtSuperblock(b.image(env)); err != nil || isExt {
		t.Fatalf("image holds a file system (%v)", err)
	}
}

func TestBlockAccessNeedsBlockKind(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	_, err := r.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-dir", VolumeCapabilities: []*csi.VolumeCapability{rwoBlock}})
	wantCode(t, err, codes.InvalidArgument)
	l := newLifecycle(t, env, r, "pvc-dir")
	_, err = r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: l.id, StagingTargetPath: l.staging, VolumeCapability: rwoBlock})
	wantCode(t, err, codes.InvalidArgument)
	_, err = r.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "pvc-vfat", Parameters: blockParams,
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "vfat"}},
			AccessMode: rwo.GetAccessMode(),
		}},
	})
	wantCode(t, err, codes.InvalidArgument)
}

// The node formats what the publish context names, so it must be the
// volume's own loop device and nothing else.
func TestNodeStageChecksDevice(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	a := newBlockVolume(t, env, r, "pvc-a", 8*mib, rwo)
	b := newBlockVolume(t, env, r, "pvc-b", 8*mib, rwo)
	for _, v := range []*blockVolume{a, b} {
		if err := v.controllerPublish(); err != nil {
			t.Fatal(err)
		}
	}
	devB := b.pubCtx[PublishContextDevicePath]
	for _, dev := range []string{devB, "/dev/loop-control", "/dev/null", "/dev/vda", "/etc/passwd", "/dev/loop999", "relative", ""} {
		bad := *a
		bad.pubCtx = map[string]string{PublishContextDevicePath: dev}
		wantCode(t, bad.stage(), codes.FailedPrecondition)
		wantMounted(t, a.staging, false)
	}
	if _, isExt, err := readExtSuperblock(devB); err != nil || isExt {
		t.Fatalf("the other volume's device was formatted (%v)", err)
	}
	if err := a.stage(); err != nil {
		t.Fatal(err)
	}
	// A staged volume is not staged again with another device.
	bad := *a
	bad.pubCtx = b.pubCtx
	wantCode(t, bad.stage(), codes.FailedPrecondition)
}

// Loop devices belong to the kernel, not to the plugin process: a
// restarted plugin finds them and carries on.
func TestBlockVolumeSurvivesRestart(t *testing.T) {
	env := newTestEnv(t)
	cfg := Config{StateDir: filepath.Join(env.dir, "state")}
	r := env.start(t, cfg)
	b := newBlockVolume(t, env, r, "pvc-restart", 8*mib, rwo)
	b.up()
	dev := b.pubCtx[PublishContextDevicePath]
	r.stop()

	r2 := env.start(t, cfg)
	b.r = r2
	b.up()
	if got := b.pubCtx[PublishContextDevicePath]; got != dev {
		t.Fatalf("after restart the volume is on %s, was on %s", got, dev)
	}
	b.down()
	if found, err := findLoop(b.image(env)); err != nil || found != "" {
		t.Fatalf("loop device %q left after ControllerUnpublishVolume (%v)", found, err)
	}
}

// A crash between attaching a loop device and recording it leaves a device
// that ControllerUnpublishVolume, or DeleteVolume, cleans up.
func TestUnrecordedLoopDeviceIsCleanedUp(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	b := newBlockVolume(t, env, r, "pvc-crash", 8*mib, rwo)
	for _, cleanup := range []func() error{
		b.controllerUnpublish,
		func() error {
			_, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: b.id})
			return err
		},
	} {
		if _, err := attachLoop(b.image(env)); err != nil {
			t.Fatal(err)
		}
		if err := cleanup(); err != nil {
			t.Fatal(err)
		}
		if found, err := findLoop(b.image(env)); err != nil || found != "" {
			t.Fatalf("loop device %q left (%v)", found, err)
		}
	}
}

func TestExpandBlockVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	b := newBlockVolume(t, env, r, "pvc-grow", 32*mib, rwo)
	b.up()
	var before unix.Statfs_t
	if err := unix.Statfs(b.target, &before); err != nil {
		t.Fatal(err)
	}

	resp, err := r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: b.id, CapacityRange: &csi.CapacityRange{RequiredBytes: 96 * mib}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetCapacityBytes() != 96*mib || !resp.GetNodeExpansionRequired() {
		t.Fatalf("ControllerExpandVolume = %v", resp)
	}
	if fi, err := os.Stat(b.image(env)); err != nil || fi.Size() != 96*mib {
		t.Fatalf("image after expansion: %v, %v", fi, err)
	}
	// Shrinking is not expanding: the volume keeps its size.
	resp, err = r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: b.id, CapacityRange: &csi.CapacityRange{RequiredBytes: 16 * mib}})
	if err != nil || resp.GetCapacityBytes() != 96*mib {
		t.Fatalf("ControllerExpandVolume to less = %v, %v", resp, err)
	}

	_, err = r.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: b.id, VolumePath: b.target, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 30}})
	wantCode(t, err, codes.OutOfRange)
	for i := range 2 {
		nresp, err := r.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{
			VolumeId: b.id, VolumePath: b.target, StagingTargetPath: b.staging,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 96 * mib}, VolumeCapability: rwo,
		})
		if err != nil {
			t.Fatalf("NodeExpandVolume #%d: %v", i+1, err)
		}
		if nresp.GetCapacityBytes() != 96*mib {
			t.Fatalf("NodeExpandVolume = %v", nresp)
		}
	}
	var after unix.Statfs_t
	if err := unix.Statfs(b.target, &after); err != nil {
		t.Fatal(err)
	}
	if got, was := int64(after.Blocks)*after.Bsize, int64(before.Blocks)*before.Bsize; got < 2*was {
		t.Fatalf("file system has %d bytes after expansion, %d before", got, was)
	}

	for _, tc := range []struct {
		name string
		req  *csi.ControllerExpandVolumeRequest
		want codes.Code
	}{
		{"no range", &csi.ControllerExpandVolumeRequest{VolumeId: b.id}, codes.InvalidArgument},
		{"inverted range", &csi.ControllerExpandVolumeRequest{VolumeId: b.id, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * mib, LimitBytes: mib}}, codes.InvalidArgument},
		{"limit below size", &csi.ControllerExpandVolumeRequest{VolumeId: b.id, CapacityRange: &csi.CapacityRange{LimitBytes: mib}}, codes.OutOfRange},
		{"unknown volume", &csi.ControllerExpandVolumeRequest{VolumeId: "vol-nope", CapacityRange: &csi.CapacityRange{RequiredBytes: mib}}, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.ctrl.ControllerExpandVolume(ctx, tc.req)
			wantCode(t, err, tc.want)
		})
	}
	_, err = r.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: b.id, VolumePath: env.dir})
	wantCode(t, err, codes.NotFound)
	b.down()
}

func TestExpandBlockAccessVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	b := newBlockVolume(t, env, r, "pvc-grow-raw", 8*mib, rwoBlock)
	b.up()
	if _, err := r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: b.id, CapacityRange: &csi.CapacityRange{RequiredBytes: 24 * mib}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: b.id, VolumePath: b.target, VolumeCapability: rwoBlock})
	if err != nil {
		t.Fatal(err)
	}
	if size, err := blockDeviceSize(b.pubCtx[PublishContextDevicePath]); err != nil || size != 24*mib || resp.GetCapacityBytes() != 24*mib {
		t.Fatalf("device size %d (%v), NodeExpandVolume said %d; want %d", size, err, resp.GetCapacityBytes(), 24*mib)
	}
	b.down()
}

func TestExpandDirectoryVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	l := newLifecycle(t, env, r, "pvc-dir-grow")
	resp, err := r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: l.id, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetCapacityBytes() != 2<<30 || resp.GetNodeExpansionRequired() {
		t.Fatalf("ControllerExpandVolume = %v", resp)
	}
	list, err := r.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil || list.GetEntries()[0].GetVolume().GetCapacityBytes() != 2<<30 {
		t.Fatalf("ListVolumes after expansion = %v, %v", list, err)
	}
	if err := l.stage(); err != nil {
		t.Fatal(err)
	}
	if err := l.publish(l.target, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: l.id, VolumePath: l.target}); err != nil {
		t.Fatalf("NodeExpandVolume of a directory volume: %v", err)
	}
}

func TestExtNeedsGrowth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a loop device")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 8*mib); err != nil {
		t.Fatal(err)
	}
	if out, err := runCmd("mkfs.ext4", "-q", "-F", img); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if err := os.Truncate(img, 16*mib); err != nil {
		t.Fatal(err)
	}
	dev, err := attachLoop(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := detachLoop(dev); err != nil {
			t.Error(err)
		}
	})
	if isExt, grow, err := extNeedsGrowth(dev); err != nil || !isExt || !grow {
		t.Fatalf("8 MiB file system on a 16 MiB device: ext %v, grow %v (%v)", isExt, grow, err)
	}
	d := &Driver{exec: utilexec.New()}
	if err := d.growExtOffline(dev); err != nil {
		t.Fatal(err)
	}
	if isExt, grow, err := extNeedsGrowth(dev); err != nil || !isExt || grow {
		t.Fatalf("file system after growing: ext %v, grow %v (%v)", isExt, grow, err)
	}
}

func runCmd(name string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}
