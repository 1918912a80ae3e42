package hostpath

import (
	"errors"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CSI ephemeral inline volumes (the Ephemeral lifecycle mode of a
// CSIDriver): the kubelet publishes a pod's inline csi: volume with no
// CreateVolume, no ControllerPublishVolume and no NodeStageVolume, under a
// volume ID it makes up, and says so in the volume context when the
// CSIDriver has podInfoOnMount. As csi-driver-host-path does
// (pkg/hostpath/nodeserver.go), the node plugin then makes the volume on
// the fly — here a directory volume below the storage root — bind-mounts
// it onto the target, and deletes it on NodeUnpublishVolume.

// publishEphemeral makes ephemeral volume id if it is not there yet and
// bind-mounts it onto target.
func (s *nodeServer) publishEphemeral(id, target string, volCap *csi.VolumeCapability, readonly bool) (*csi.NodePublishVolumeResponse, error) {
	const method = "NodePublishVolume"
	if volCap.GetBlock() != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: ephemeral volume %s: access type block is not supported for ephemeral volumes", method, id)
	}
	mode := volCap.GetAccessMode().GetMode()
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	kind, exists, err := d.volumeKindOf(id)
	if err != nil {
		return nil, err
	}
	if exists && (kind != kindDirectory || !d.state.Ephemeral[id]) {
		return nil, status.Errorf(codes.AlreadyExists, "%s: volume %s exists and is not an ephemeral volume of this node", method, id)
	}
	if !exists {
		if err := os.MkdirAll(d.volumeDir(id), 0o750); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: ephemeral mode failed to create volume %s: %v", method, id, err)
		}
	}
	if d.state.Ephemeral == nil {
		d.state.Ephemeral = map[string]bool{}
	}
	d.state.Ephemeral[id] = true
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	want := &publishRecord{Readonly: readonly || isReadOnly(mode), AccessMode: mode.String(),
		MountFlags: volCap.GetMount().GetMountFlags()}
	ident, err := d.identify(id, kindDirectory, "")
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	targets := d.state.Published[id]
	m, err := mountOf(target, ident)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if m.mounted {
		if !m.ours() {
			return nil, status.Errorf(codes.AlreadyExists, "%s: target path %s already holds a mount that is not volume %s", method, target, id)
		}
		if have, ok := targets[target]; ok && !have.same(want) {
			return nil, status.Errorf(codes.AlreadyExists, "%s: volume %s is already published at %s with readonly=%t, access mode %s", method, id, target, have.Readonly, have.AccessMode)
		}
	} else {
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			want.CreatedTarget = true
		}
		if err := os.MkdirAll(target, 0o750); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: create target path: %v", method, err)
		}
		if err := d.bindMount(d.volumeDir(id), target, want.Readonly, want.MountFlags); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	if targets == nil {
		targets = map[string]*publishRecord{}
		d.state.Published[id] = targets
	}
	if have, ok := targets[target]; ok && have.CreatedTarget {
		want.CreatedTarget = true
	}
	targets[target] = want
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// deleteEphemeralIfUnused deletes ephemeral volume id once it is published
// nowhere; other volumes are left alone. The caller holds d.mu.
func (d *Driver) deleteEphemeralIfUnused(id string) error {
	if !d.state.Ephemeral[id] || len(d.state.Published[id]) > 0 {
		return nil
	}
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return fmt.Errorf("deleting ephemeral volume %s: %w", id, err)
	}
	delete(d.state.Ephemeral, id)
	return d.store.save(d.state)
}
