package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TopologyKeyNode is the topology segment NodeGetInfo reports, naming the
// node.
const TopologyKeyNode = "topology.hostpath.csisim.io/node"

// maxStackedMounts bounds how many mounts on one path an unstage or
// unpublish peels off before giving up.
const maxStackedMounts = 8

// nodeServer serves the CSI Node service: NodeStageVolume bind-mounts the
// volume's backend directory onto the staging path, NodePublishVolume
// bind-mounts the staging path onto the target path.
type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Driver
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	} {
		caps = append(caps, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             s.d.cfg.NodeID,
		MaxVolumesPerNode:  s.d.cfg.MaxVolumesPerNode,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{TopologyKeyNode: s.d.cfg.NodeID}},
	}, nil
}

func (s *nodeServer) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume: %v", err)
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume: %v", err)
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume: %v", err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	if ok, err := d.volumeExists(id); err != nil {
		return nil, err
	} else if !ok {
		return nil, status.Errorf(codes.NotFound, "NodeStageVolume: volume %s does not exist", id)
	}
	if rec, ok := d.state.Staged[id]; ok && rec.StagingPath != staging {
		if m, err := d.mountOf(rec.StagingPath, id); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeStageVolume: %v", err)
		} else if m.ours() {
			return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume: volume %s is already staged at %s", id, rec.StagingPath)
		}
	}
	// The CO should have created the staging directory; creating it is
	// harmless and spares a pointless failure.
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeStageVolume: create staging path: %v", err)
	}
	m, err := d.mountOf(staging, id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodeStageVolume: %v", err)
	}
	switch {
	case m.mounted && !m.ours():
		return nil, status.Errorf(codes.AlreadyExists, "NodeStageVolume: staging path %s already holds a mount that is not volume %s", staging, id)
	case !m.mounted:
		if err := d.mounter.Mount(d.volumeDir(id), staging, "", []string{"bind"}); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeStageVolume: bind mount volume %s on %s: %v", id, staging, err)
		}
	}
	d.state.Staged[id] = &stageRecord{StagingPath: staging}
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeStageVolume: %v", err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnstageVolume: %v", err)
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnstageVolume: %v", err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	rec, recorded := d.state.Staged[id]
	recorded = recorded && rec.StagingPath == staging
	if err := d.unmountVolume("NodeUnstageVolume", staging, id, recorded); err != nil {
		return nil, err
	}
	// The staging directory belongs to the CO, so it stays.
	if recorded {
		delete(d.state.Staged, id)
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeUnstageVolume: %v", err)
		}
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (s *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v", err)
	}
	target, err := checkMountPath(req.GetTargetPath(), "target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v", err)
	}
	volCap := req.GetVolumeCapability()
	if err := checkCapability(volCap); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v", err)
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v (this plugin stages volumes)", err)
	}
	mode := volCap.GetAccessMode().GetMode()
	want := publishRecord{Readonly: req.GetReadonly() || isReadOnly(mode), AccessMode: mode.String()}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	if ok, err := d.volumeExists(id); err != nil {
		return nil, err
	} else if !ok {
		return nil, status.Errorf(codes.NotFound, "NodePublishVolume: volume %s does not exist", id)
	}
	if rec, ok := d.state.Staged[id]; !ok || rec.StagingPath != staging {
		return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume: volume %s is not staged at %s", id, staging)
	}
	if m, err := d.mountOf(staging, id); err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume: %v", err)
	} else if !m.ours() {
		return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume: staging path %s no longer holds volume %s", staging, id)
	}
	targets := d.state.Published[id]
	for other, p := range targets {
		if other != target && (mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER ||
			modeFromName(p.AccessMode) == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER) {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume: volume %s is single-writer and already published at %s", id, other)
		}
	}

	m, err := d.mountOf(target, id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume: %v", err)
	}
	if m.mounted {
		if !m.ours() {
			return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume: target path %s already holds a mount that is not volume %s", target, id)
		}
		if have, ok := targets[target]; ok && *have != want {
			return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume: volume %s is already published at %s with readonly=%t, access mode %s", id, target, have.Readonly, have.AccessMode)
		}
	} else {
		if err := os.MkdirAll(target, 0o750); err != nil {
			return nil, status.Errorf(codes.Internal, "NodePublishVolume: create target path: %v", err)
		}
		options := []string{"bind"}
		if want.Readonly {
			options = append(options, "ro")
		}
		options = append(options, volCap.GetMount().GetMountFlags()...)
		if err := d.mounter.Mount(staging, target, "", options); err != nil {
			return nil, status.Errorf(codes.Internal, "NodePublishVolume: bind mount %s on %s: %v", staging, target, err)
		}
	}
	if targets == nil {
		targets = map[string]*publishRecord{}
		d.state.Published[id] = targets
	}
	targets[target] = &want
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume: %v", err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnpublishVolume: %v", err)
	}
	target, err := checkMountPath(req.GetTargetPath(), "target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnpublishVolume: %v", err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	_, recorded := d.state.Published[id][target]
	if err := d.unmountVolume("NodeUnpublishVolume", target, id, recorded); err != nil {
		return nil, err
	}
	// The plugin created the target directory, so it removes it. Remove,
	// not RemoveAll: a directory that is not empty means something is
	// wrong, and its contents are not ours to delete.
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume: remove target path: %v", err)
	}
	if recorded {
		delete(d.state.Published[id], target)
		if len(d.state.Published[id]) == 0 {
			delete(d.state.Published, id)
		}
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume: %v", err)
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeGetVolumeStats: %v", err)
	}
	if path == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeGetVolumeStats: volume path is required")
	}
	d := s.d
	if ok, err := d.volumeExists(id); err != nil {
		return nil, err
	} else if !ok {
		return nil, status.Errorf(codes.NotFound, "NodeGetVolumeStats: volume %s does not exist", id)
	}
	m, err := d.mountOf(path, id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodeGetVolumeStats: %v", err)
	}
	if !m.ours() {
		return nil, status.Errorf(codes.NotFound, "NodeGetVolumeStats: %s is not a mount of volume %s", path, id)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeGetVolumeStats: statfs %s: %v", path, err)
	}
	bsize := fs.Bsize
	return &csi.NodeGetVolumeStatsResponse{
		Usage: []*csi.VolumeUsage{
			{
				Unit:      csi.VolumeUsage_BYTES,
				Total:     int64(fs.Blocks) * bsize,
				Available: int64(fs.Bavail) * bsize,
				Used:      int64(fs.Blocks-fs.Bfree) * bsize,
			},
			{
				Unit:      csi.VolumeUsage_INODES,
				Total:     int64(fs.Files),
				Available: int64(fs.Ffree),
				Used:      int64(fs.Files - fs.Ffree),
			},
		},
	}, nil
}

// mountState says what is mounted on a path.
type mountState struct {
	mounted bool
	// sameDir: the path shows the volume's backend directory, i.e. it is
	// a bind mount of that volume (directly or via the staging path).
	sameDir bool
}

func (m mountState) ours() bool { return m.mounted && m.sameDir }

// mountOf tells whether path is a mount point and whether it shows volume
// id. A bind mount's root has the device and inode of its source directory,
// which identifies the volume without parsing mount sources.
func (d *Driver) mountOf(path, id string) (mountState, error) {
	mounted, err := mountinfo.Mounted(path)
	if errors.Is(err, os.ErrNotExist) {
		return mountState{}, nil
	}
	if err != nil {
		return mountState{}, fmt.Errorf("check mount point %s: %w", path, err)
	}
	if !mounted {
		return mountState{}, nil
	}
	var at, vol unix.Stat_t
	if err := unix.Stat(path, &at); err != nil {
		return mountState{}, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := unix.Stat(d.volumeDir(id), &vol); err != nil {
		if errors.Is(err, unix.ENOENT) {
			// The volume is gone; whatever is mounted cannot be shown
			// to be it.
			return mountState{mounted: true}, nil
		}
		return mountState{}, fmt.Errorf("stat volume %s: %w", id, err)
	}
	return mountState{mounted: true, sameDir: at.Dev == vol.Dev && at.Ino == vol.Ino}, nil
}

// unmountVolume unmounts path until nothing is mounted there. It refuses to
// unmount something that is neither shown to be the volume nor recorded as
// mounted by this plugin. Errors are gRPC statuses prefixed with method.
func (d *Driver) unmountVolume(method, path, id string, recorded bool) error {
	for range maxStackedMounts {
		m, err := d.mountOf(path, id)
		if err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		if !m.mounted {
			return nil
		}
		if !m.ours() && !recorded {
			return status.Errorf(codes.FailedPrecondition, "%s: %s holds a mount that is not volume %s", method, path, id)
		}
		if err := d.mounter.Unmount(path); err != nil {
			return status.Errorf(codes.Internal, "%s: unmount %s: %v", method, path, err)
		}
	}
	return status.Errorf(codes.Internal, "%s: %s is still mounted after %d unmounts", method, path, maxStackedMounts)
}

// checkMountPath accepts a CO-supplied absolute path and returns it cleaned.
func checkMountPath(p, what string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("%s is required", what)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%s must not contain NUL", what)
	case !filepath.IsAbs(p):
		return "", fmt.Errorf("%s %q must be absolute", what, p)
	}
	return filepath.Clean(p), nil
}
