package mock

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// publishEphemeral records the publication of an inline ephemeral volume
// (csiutil.IsEphemeral). Such a volume was never created, attached or
// staged: its ID is the kubelet's, and the publication is all there is of
// it, gone with NodeUnpublishVolume.
func (s *nodeServer) publishEphemeral(id, target string, c *csi.VolumeCapability, readonly bool) (*csi.NodePublishVolumeResponse, error) {
	if c.GetBlock() != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: ephemeral volume %s: access type block is not supported for ephemeral volumes", id)
	}
	mode := c.GetAccessMode().GetMode()
	want := &publishRec{readonly: readonly || isReadOnly(mode), mode: mode.String()}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.volumes[id]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume: volume %s exists and is not an ephemeral volume", id)
	}
	n := b.node(s.d.cfg.NodeID)
	targets := n.published[id]
	if have, ok := targets[target]; ok {
		if *have != *want {
			return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume: volume %s is already published at %s with readonly=%t, access mode %s", id, target, have.readonly, have.mode)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := makeTarget(target, false); err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume: creating target path: %v", err)
	}
	if targets == nil {
		targets = map[string]*publishRec{}
		n.published[id] = targets
	}
	targets[target] = want
	return &csi.NodePublishVolumeResponse{}, nil
}
