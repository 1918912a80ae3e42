package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

func snapshotSource(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
}

func volumeSource(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
}

func TestSnapshotRestoreCloneDirectory(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	vol, err := r.ctrl.CreateVolume(ctx, createReq("pvc-src", 10*mib, 0))
	if err != nil {
		t.Fatal(err)
	}
	srcID := vol.GetVolume().GetVolumeId()
	srcDir := filepath.Join(env.root, "volumes", srcID)
	write := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(srcDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "version 1", 0o640)
	write("sub/b.txt", "nested", 0o600)
	// Links are data: copied as links, never followed out of the volume.
	if err := os.Symlink("/etc/passwd", filepath.Join(srcDir, "escape")); err != nil {
		t.Fatal(err)
	}

	snapReq := &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: srcID}
	var snapID string
	for i := range 2 {
		resp, err := r.ctrl.CreateSnapshot(ctx, snapReq)
		if err != nil {
			t.Fatalf("CreateSnapshot #%d: %v", i+1, err)
		}
		s := resp.GetSnapshot()
		if !s.GetReadyToUse() || s.GetSourceVolumeId() != srcID || s.GetSizeBytes() != 10*mib || s.GetCreationTime() == nil {
			t.Fatalf("snapshot = %v", s)
		}
		if snapID != "" && s.GetSnapshotId() != snapID {
			t.Fatalf("retry gave snapshot %s, first call %s", s.GetSnapshotId(), snapID)
		}
		snapID = s.GetSnapshotId()
	}
	write("a.txt", "version 2", 0o640)

	restore := func(name string, src *csi.VolumeContentSource, required int64) (*csi.Volume, error) {
		req := createReq(name, required, 0)
		req.VolumeContentSource = src
		resp, err := r.ctrl.CreateVolume(ctx, req)
		return resp.GetVolume(), err
	}
	restored, err := restore("pvc-restored", snapshotSource(snapID), 0)
	if err != nil {
		t.Fatal(err)
	}
	if restored.GetContentSource().GetSnapshot().GetSnapshotId() != snapID {
		t.Fatalf("restored volume's content source = %v", restored.GetContentSource())
	}
	cloned, err := restore("pvc-clone", volumeSource(srcID), 20*mib)
	if err != nil {
		t.Fatal(err)
	}
	checkFile := func(volID, rel, want string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(env.root, "volumes", volID, rel)
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("%s = %q, %v; want %q", p, got, err, want)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s mode = %v, %v; want %v", p, fi.Mode(), err, mode)
		}
	}
	checkFile(restored.GetVolumeId(), "a.txt", "version 1", 0o640)
	checkFile(restored.GetVolumeId(), "sub/b.txt", "nested", 0o600)
	checkFile(cloned.GetVolumeId(), "a.txt", "version 2", 0o640)
	if link, err := os.Readlink(filepath.Join(env.root, "volumes", restored.GetVolumeId(), "escape")); err != nil || link != "/etc/passwd" {
		t.Fatalf("link in restored volume = %q, %v", link, err)
	}
	// Without a required size, a restore gets the default capacity (or
	// the snapshot's size, were that larger); with a smaller required
	// size, it cannot hold the data.
	if restored.GetCapacityBytes() != 1<<30 {
		t.Fatalf("restored capacity = %d, want the default", restored.GetCapacityBytes())
	}
	_, err = restore("pvc-too-small", snapshotSource(snapID), mib)
	wantCode(t, err, codes.OutOfRange)
	big, err := r.ctrl.CreateVolume(ctx, createReq("pvc-big", 2<<30, 0))
	if err != nil {
		t.Fatal(err)
	}
	bigClone, err := restore("pvc-big-clone", volumeSource(big.GetVolume().GetVolumeId()), 0)
	if err != nil || bigClone.GetCapacityBytes() != 2<<30 {
		t.Fatalf("clone of a 2 GiB volume without a required size = %v, %v", bigClone, err)
	}

	// The same name with another source is another volume.
	_, err = restore("pvc-restored", volumeSource(srcID), 0)
	wantCode(t, err, codes.AlreadyExists)
	// The same snapshot name for another source is refused.
	_, err = r.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: cloned.GetVolumeId()})
	wantCode(t, err, codes.AlreadyExists)
	// A directory snapshot does not become a block volume.
	req := &csi.CreateVolumeRequest{Name: "pvc-kind", Parameters: blockParams, VolumeCapabilities: []*csi.VolumeCapability{rwo}, VolumeContentSource: snapshotSource(snapID)}
	_, err = r.ctrl.CreateVolume(ctx, req)
	wantCode(t, err, codes.InvalidArgument)

	got, err := r.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snapID})
	if err != nil || got.GetSnapshot().GetSnapshotId() != snapID {
		t.Fatalf("GetSnapshot = %v, %v", got, err)
	}
	for i := range 2 {
		if _, err := r.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snapID}); err != nil {
			t.Fatalf("DeleteSnapshot #%d: %v", i+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(env.root, "snapshots", snapID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshot files left: %v", err)
	}
	_, err = r.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snapID})
	wantCode(t, err, codes.NotFound)
	_, err = restore("pvc-after-delete", snapshotSource(snapID), 0)
	wantCode(t, err, codes.NotFound)
	// Restored volumes are copies: they outlive the snapshot.
	checkFile(restored.GetVolumeId(), "a.txt", "version 1", 0o640)

	for _, tc := range []struct {
		name string
		req  *csi.CreateSnapshotRequest
		want codes.Code
	}{
		{"no name", &csi.CreateSnapshotRequest{SourceVolumeId: srcID}, codes.InvalidArgument},
		{"no source", &csi.CreateSnapshotRequest{Name: "s"}, codes.InvalidArgument},
		{"unknown source", &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "vol-nope"}, codes.NotFound},
		{"parameters", &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: srcID, Parameters: map[string]string{"x": "y"}}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.ctrl.CreateSnapshot(ctx, tc.req)
			wantCode(t, err, tc.want)
		})
	}
}

func TestListSnapshots(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	var vols []string
	for i := range 2 {
		resp, err := r.ctrl.CreateVolume(ctx, createReq(fmt.Sprintf("pvc-%d", i), 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		vols = append(vols, resp.GetVolume().GetVolumeId())
	}
	bySource := map[string]int{}
	for i := range 5 {
		src := vols[i%2]
		if _, err := r.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: fmt.Sprintf("snap-%d", i), SourceVolumeId: src}); err != nil {
			t.Fatal(err)
		}
		bySource[src]++
	}

	list := func(req *csi.ListSnapshotsRequest) []string {
		t.Helper()
		var ids []string
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			resp, err := r.ctrl.ListSnapshots(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if req.GetMaxEntries() > 0 && len(resp.GetEntries()) > int(req.GetMaxEntries()) {
				t.Fatalf("page of %d entries, max %d", len(resp.GetEntries()), req.GetMaxEntries())
			}
			for _, e := range resp.GetEntries() {
				ids = append(ids, e.GetSnapshot().GetSnapshotId())
			}
			if resp.GetNextToken() == "" {
				return ids
			}
			req.StartingToken = resp.GetNextToken()
		}
	}
	for _, max := range []int32{0, 1, 2, 5, 6} {
		if got := list(&csi.ListSnapshotsRequest{MaxEntries: max}); len(got) != 5 {
			t.Errorf("max_entries=%d: listed %d snapshots, want 5", max, len(got))
		}
	}
	for _, src := range vols {
		if got := list(&csi.ListSnapshotsRequest{SourceVolumeId: src, MaxEntries: 1}); len(got) != bySource[src] {
			t.Errorf("source %s: listed %d snapshots, want %d", src, len(got), bySource[src])
		}
	}
	one := snapshotIDFor("snap-3")
	if got := list(&csi.ListSnapshotsRequest{SnapshotId: one}); len(got) != 1 || got[0] != one {
		t.Errorf("by ID: %v", got)
	}
	for _, req := range []*csi.ListSnapshotsRequest{
		{SnapshotId: "snap-00000000000000000000"},
		{SnapshotId: "../../etc"},
		{SourceVolumeId: "vol-nope"},
		{SnapshotId: one, SourceVolumeId: vols[0]}, // snap-3 is of vols[1]
	} {
		if got := list(req); len(got) != 0 {
			t.Errorf("%v: listed %v, want nothing", req, got)
		}
	}
	_, err := r.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: "bogus"})
	wantCode(t, err, codes.Aborted)
	_, err = r.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: -1})
	wantCode(t, err, codes.InvalidArgument)
}

// A block snapshot is the image with its holes; restored into a larger
// volume, the file system grows to fill it when staged.
func TestSnapshotRestoreBlock(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	src := newBlockVolume(t, env, r, "pvc-blk-src", 32*mib, rwo)
	src.up()
	if err := os.WriteFile(filepath.Join(src.target, "data.txt"), []byte("in the snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Unmounting flushes the file system into the image.
	src.down()

	resp, err := r.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-blk", SourceVolumeId: src.id})
	if err != nil {
		t.Fatal(err)
	}
	snapID := resp.GetSnapshot().GetSnapshotId()
	snapImage := filepath.Join(env.root, "snapshots", snapID+".img")
	fi, err := os.Stat(snapImage)
	if err != nil {
		t.Fatal(err)
	}
	// Holes stay holes; so do preallocated extents, which read as zeros.
	if fi.Size() != 32*mib || allocatedBytes(t, snapImage) > allocatedBytes(t, src.image(env)) {
		t.Fatalf("snapshot image: size %d, allocated %d (source allocates %d); want a sparse copy", fi.Size(), allocatedBytes(t, snapImage), allocatedBytes(t, src.image(env)))
	}

	req := &csi.CreateVolumeRequest{
		Name: "pvc-blk-restored", Parameters: blockParams, VolumeCapabilities: []*csi.VolumeCapability{rwo},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 96 * mib}, VolumeContentSource: snapshotSource(snapID),
	}
	vol, err := r.ctrl.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	restored := &blockVolume{
		t: t, r: r, id: vol.GetVolume().GetVolumeId(), cap: rwo,
		staging: filepath.Join(env.dir, "kubelet", "restored", "globalmount"),
		target:  filepath.Join(env.dir, "kubelet", "pods", "restored", "target"),
	}
	restored.up()
	if got, err := os.ReadFile(filepath.Join(restored.target, "data.txt")); err != nil || string(got) != "in the snapshot" {
		t.Fatalf("restored data = %q, %v", got, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(restored.target, &fs); err != nil {
		t.Fatal(err)
	}
	if total := int64(fs.Blocks) * fs.Bsize; total < 64*mib {
		t.Fatalf("restored file system has %d bytes; it was not grown to the 96 MiB volume", total)
	}
	restored.down()

	// Clones of block volumes are image copies too.
	req = &csi.CreateVolumeRequest{Name: "pvc-blk-clone", Parameters: blockParams, VolumeCapabilities: []*csi.VolumeCapability{rwoBlock}, VolumeContentSource: volumeSource(src.id)}
	clone, err := r.ctrl.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if clone.GetVolume().GetCapacityBytes() != 1<<30 {
		t.Fatalf("clone capacity = %d, want the default", clone.GetVolume().GetCapacityBytes())
	}
}
