package mock

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/csiutil"
	"google.golang.org/grpc/codes"
)

// An inline ephemeral publish needs no CreateVolume, attach or stage; a
// repeat with other parameters, block access and a created volume's ID
// are refused.
func TestEphemeralPublish(t *testing.T) {
	b := NewBackend(0)
	dir := socketDir(t)
	ctrl := serve(t, dir, Config{Mode: ModeController, Backend: b}).ctrl
	node := serve(t, dir, Config{Mode: ModeNode, NodeID: "n1", Backend: b}).node
	const vol, target = "csi-0123abcd", "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/scratch/mount"
	ephemeralCtx := map[string]string{csiutil.EphemeralContextKey: "true"}
	publish := func(id string, c *csi.VolumeCapability, ro bool, vc map[string]string) func(context.Context) error {
		return func(ctx context.Context) error {
			return errOf(node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target,
				VolumeCapability: c, Readonly: ro, VolumeContext: vc}))
		}
	}
	runSteps(t, []step{
		{"persistent publish of an unknown volume", publish(vol, rwo, false, map[string]string{csiutil.EphemeralContextKey: "false"}), codes.FailedPrecondition, ""},
		{"ephemeral publish", publish(vol, rwo, false, ephemeralCtx), codes.OK, ""},
		{"repeated", publish(vol, rwo, false, ephemeralCtx), codes.OK, ""},
		{"repeated read-only", publish(vol, rwo, true, ephemeralCtx), codes.AlreadyExists, "already published"},
		{"block", publish("csi-blk", blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), false, ephemeralCtx), codes.InvalidArgument, "block"},
		{"create a volume", func(ctx context.Context) error {
			return errOf(ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{rwo}}))
		}, codes.OK, ""},
		{"ephemeral publish of a created volume", publish("mock-pvc-1", rwo, false, ephemeralCtx), codes.AlreadyExists, "not an ephemeral volume"},
		{"unpublish", func(ctx context.Context) error {
			return errOf(node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target}))
		}, codes.OK, ""},
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.node("n1").published[vol]; len(got) != 0 {
		t.Errorf("still published: %v", got)
	}
}
