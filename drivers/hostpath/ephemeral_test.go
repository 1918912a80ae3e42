package hostpath

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/csiutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An inline ephemeral volume: made on NodePublishVolume (no CreateVolume,
// no stage), bind-mounted onto the target, deleted on NodeUnpublishVolume.
func TestEphemeralVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{})
	ctx := context.Background()
	const id = "csi-0123456789abcdef"
	target := filepath.Join(env.dir, "kubelet", "pods", "uid-1", "volumes", "scratch", "mount")
	publish := func(id, target string, c *csi.VolumeCapability) error {
		_, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: c,
			VolumeContext: map[string]string{csiutil.EphemeralContextKey: "true", "csi.storage.k8s.io/pod.name": "app"}})
		return err
	}
	// Twice: the second is a repeat, answered OK.
	for range 2 {
		if err := publish(id, target, rwo); err != nil {
			t.Fatalf("NodePublishVolume: %v", err)
		}
	}
	wantMounted(t, target, true)
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.d.volumeDir(id), "f")); err != nil {
		t.Errorf("written through the target, not in the volume: %v", err)
	}
	// Block access is not offered for ephemeral volumes.
	block := &csi.VolumeCapability{AccessMode: rwo.GetAccessMode(), AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
	if err := publish("csi-other", filepath.Join(env.dir, "blk"), block); status.Code(err) != codes.InvalidArgument {
		t.Errorf("block ephemeral publish = %v, want InvalidArgument", err)
	}
	// A volume CreateVolume made is not taken for an ephemeral one.
	l := newLifecycle(t, env, r, "pvc-real")
	if err := publish(l.id, filepath.Join(env.dir, "other"), rwo); status.Code(err) != codes.AlreadyExists {
		t.Errorf("ephemeral publish of a created volume = %v, want AlreadyExists", err)
	}

	if _, err := r.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	wantMounted(t, target, false)
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target left behind: %v", err)
	}
	if _, err := os.Stat(r.d.volumeDir(id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ephemeral volume left behind: %v", err)
	}
	r.d.mu.Lock()
	left := r.d.state.Ephemeral[id]
	r.d.mu.Unlock()
	if left {
		t.Error("the state still records the ephemeral volume")
	}
	// The created volume is not deleted by an unpublish.
	if _, err := r.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: l.id, TargetPath: filepath.Join(env.dir, "other")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.d.volumeDir(l.id)); err != nil {
		t.Errorf("a created volume went with an unpublish: %v", err)
	}
}
