package hostpath

// The Node service's staging: NodeStageVolume and NodeUnstageVolume.

import (
	"context"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultFsType is what a block volume is formatted with when the
// capability names no file system.
const defaultFsType = "ext4"

func (s *nodeServer) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if s.d.cfg.NoStage {
		return nil, status.Error(codes.Unimplemented, "NodeStageVolume: this plugin does not stage volumes (--no-stage)")
	}
	return s.stage("NodeStageVolume", req)
}

// stage stages a volume: NodeStageVolume, and NodePublishVolume's own
// staging with --no-stage (nostage.go); method names the call in errors.
func (s *nodeServer) stage(method string, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, volCap := req.GetVolumeId(), req.GetVolumeCapability()
	staging, err := s.d.checkMountRequest(method, id, req.GetStagingTargetPath(), "staging target path", volCap)
	if err != nil {
		return nil, err
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	kind, err := d.existingKind(method, id, volCap)
	if err != nil {
		return nil, err
	}
	mode := volCap.GetAccessMode().GetMode()
	want := &stageRecord{
		StagingPath: staging,
		Block:       volCap.GetBlock() != nil,
		FsType:      volCap.GetMount().GetFsType(),
		MountFlags:  volCap.GetMount().GetMountFlags(),
		AccessMode:  mode.String(),
		Readonly:    isReadOnly(mode) || req.GetPublishContext()[PublishContextReadonly] == "true",
	}
	if kind == kindBlock {
		if want.Device, err = d.publishedDevice(method, id, req.GetPublishContext(), ""); err != nil {
			return nil, err
		}
	}
	ident, err := d.identify(id, kind, want.Device)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}

	rec, staged := d.state.Staged[id]
	if staged && rec.StagingPath != staging {
		live := rec.Block // a block-access staging is only a record
		if !rec.Block {
			m, err := mountOf(rec.StagingPath, ident)
			if err != nil {
				return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
			}
			live = m.ours()
		}
		if live {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s is already staged at %s", method, id, rec.StagingPath)
		}
	}
	sameAsBefore := staged && rec.StagingPath == staging && rec.sameRequest(want)
	// The CO should have created the staging directory; creating it is
	// harmless and spares a pointless failure.
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: create staging path: %v", method, err)
	}
	if want.Block {
		if staged && rec.StagingPath == staging && !sameAsBefore {
			return nil, status.Errorf(codes.AlreadyExists, "%s: volume %s is already staged at %s with another capability or device", method, id, staging)
		}
	} else {
		m, err := mountOf(staging, ident)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		switch {
		case m.mounted && !m.ours():
			return nil, status.Errorf(codes.AlreadyExists, "%s: staging path %s already holds a mount that is not volume %s", method, staging, id)
		case m.mounted:
			if staged && rec.StagingPath == staging && !sameAsBefore {
				return nil, status.Errorf(codes.AlreadyExists, "%s: volume %s is already staged at %s with another capability or options", method, id, staging)
			}
		case kind == kindDirectory:
			if err := d.bindMount(d.volumeDir(id), staging, want.Readonly, nil); err != nil {
				return nil, status.Errorf(codes.Internal, "%s: volume %s: %v", method, id, err)
			}
		default:
			if err := d.formatAndMount(want); err != nil {
				return nil, status.Errorf(codes.Internal, "%s: volume %s: %v", method, id, err)
			}
		}
	}
	d.state.Staged[id] = want
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// formatAndMount formats a block volume's device if it holds no file system
// yet and mounts it on the staging path. A file system smaller than its
// device (a volume restored from a smaller snapshot, or expanded while not
// staged) is grown first; see resize.go.
func (d *Driver) formatAndMount(st *stageRecord) error {
	fsType := st.FsType
	if fsType == "" {
		fsType = defaultFsType
	}
	if !st.Readonly {
		if err := d.growExtOffline(st.Device); err != nil {
			return err
		}
	}
	if err := d.formatter.FormatAndMount(st.Device, st.StagingPath, fsType, d.stageMountOptions(st)); err != nil {
		return fmt.Errorf("format and mount %s on %s: %w", st.Device, st.StagingPath, err)
	}
	if !st.Readonly && fsType == "xfs" {
		// xfs grows only while mounted; xfs_growfs does nothing to one
		// that fills its device.
		if _, err := d.resizer.Resize(st.Device, st.StagingPath); err != nil {
			return fmt.Errorf("grow file system on %s: %w", st.Device, err)
		}
	}
	return nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if s.d.cfg.NoStage {
		return nil, status.Error(codes.Unimplemented, "NodeUnstageVolume: this plugin does not stage volumes (--no-stage)")
	}
	return s.unstage("NodeUnstageVolume", req)
}

// unstage unstages a volume: NodeUnstageVolume, and NodeUnpublishVolume's
// own unstaging with --no-stage (nostage.go).
func (s *nodeServer) unstage(method string, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id := req.GetVolumeId()
	staging, err := checkUnmountRequest(method, id, req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, err
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	rec, recorded := d.state.Staged[id]
	recorded = recorded && rec.StagingPath == staging
	// A block-access staging mounted nothing, so there is nothing to
	// unmount; the loop device is the controller's to detach.
	if !recorded || !rec.Block {
		device := ""
		if recorded {
			device = rec.Device
		}
		ident, err := d.identifyExisting(id, device)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		if err := d.unmountVolume(method, staging, ident, recorded); err != nil {
			return nil, err
		}
	}
	// The staging directory belongs to the CO, so it stays.
	if recorded {
		delete(d.state.Staged, id)
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}
