package hostpath

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Without STAGE_UNSTAGE_VOLUME (--no-stage) the kubelet calls neither
// NodeStageVolume nor NodeUnstageVolume, and NodePublishVolume gets no
// staging path: the plugin stages a volume itself, on a path of its own
// below its state directory, before its first publication on the node,
// and unstages it after its last, as a driver that mounts a volume once
// per node and binds it into each target does.

// privateStagingPath is where the plugin stages volume id itself.
func (d *Driver) privateStagingPath(id string) (string, error) {
	dir, err := filepath.Abs(d.cfg.StateDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "staging", id), nil
}

// stageForPublish stages the volume of req on its private staging path,
// or finds it staged there, and makes req publish from there.
func (s *nodeServer) stageForPublish(method string, req *csi.NodePublishVolumeRequest) error {
	if err := checkVolumeID(req.GetVolumeId()); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	staging, err := s.d.privateStagingPath(req.GetVolumeId())
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	_, err = s.stage(method, &csi.NodeStageVolumeRequest{VolumeId: req.GetVolumeId(), PublishContext: req.GetPublishContext(),
		StagingTargetPath: staging, VolumeCapability: req.GetVolumeCapability(), Secrets: req.GetSecrets(),
		VolumeContext: req.GetVolumeContext()})
	if err != nil {
		return err
	}
	req.StagingTargetPath = staging
	return nil
}

// unstageUnpublished unstages volume id from its private staging path
// once it is published nowhere on the node, and removes the path.
func (s *nodeServer) unstageUnpublished(method, id string) error {
	staging, err := s.d.privateStagingPath(id)
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	s.d.mu.Lock()
	rec, staged := s.d.state.Staged[id]
	unused := staged && rec.StagingPath == staging && len(s.d.state.Published[id]) == 0
	s.d.mu.Unlock()
	if !unused {
		return nil
	}
	if _, err := s.unstage(method, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		return err
	}
	if err := os.Remove(staging); err != nil && !errors.Is(err, os.ErrNotExist) {
		return status.Errorf(codes.Internal, "%s: remove staging path: %v", method, err)
	}
	return nil
}
