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

	"github.com/csisim/csisim/drivers/csiutil"
)

// TopologyKeyNode is the topology segment NodeGetInfo reports, naming the
// node.
const TopologyKeyNode = "topology.hostpath.csisim.io/node"

// maxStackedMounts bounds how many mounts on one path an unstage or
// unpublish peels off before giving up.
const maxStackedMounts = 8

// defaultFsType is what a block volume is formatted with when the
// capability names no file system.
const defaultFsType = "ext4"

// nodeServer serves the CSI Node service.
//
// Directory volumes: NodeStageVolume bind-mounts the backend directory onto
// the staging path, NodePublishVolume bind-mounts the staging path onto the
// target path.
//
// Block volumes, access type mount: NodeStageVolume formats the loop device
// named in the publish context if it holds no file system yet and mounts
// it on the staging path; NodePublishVolume bind-mounts the staging path
// onto the target path. Access type block: NodeStageVolume only records the
// device; NodePublishVolume creates the target file and bind-mounts the
// device node onto it.
type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Driver
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		if t == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME && s.d.cfg.NoStage {
			continue
		}
		caps = append(caps, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	n := nodeRecord{NodeID: s.d.cfg.NodeID, Zone: s.d.cfg.Zone}
	resp := &csi.NodeGetInfoResponse{NodeId: s.d.cfg.NodeID, MaxVolumesPerNode: s.d.cfg.MaxVolumesPerNode}
	if !s.d.cfg.NoTopology {
		resp.AccessibleTopology = &csi.Topology{Segments: n.segments()}
	}
	return resp, nil
}

func (s *nodeServer) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if s.d.cfg.NoStage {
		return nil, status.Error(codes.Unimplemented, "NodeStageVolume: this plugin does not stage volumes (--no-stage)")
	}
	return s.stage("NodeStageVolume", req)
}

// stage stages a volume: NodeStageVolume, and NodePublishVolume's own
// staging with --no-stage (nostage.go); method names the call in errors.
func (s *nodeServer) stage(method string, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	volCap := req.GetVolumeCapability()
	if err := checkVolumeCapability(volCap, ""); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	// A mode the driver does not support is the CSI spec's "Exceeds
	// capabilities" of the node service: FailedPrecondition.
	if err := s.d.checkAccessMode(volCap.GetAccessMode().GetMode()); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%s: %v", method, err)
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
	if err := d.formatter.FormatAndMount(st.Device, st.StagingPath, fsType, stageMountOptions(st)); err != nil {
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
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
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

func (s *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	const method = "NodePublishVolume"
	if s.d.cfg.NoStage && !csiutil.IsEphemeral(req.GetVolumeContext()) {
		if err := s.stageForPublish(method, req); err != nil {
			return nil, err
		}
	}
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	target, err := checkMountPath(req.GetTargetPath(), "target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	volCap := req.GetVolumeCapability()
	if err := checkVolumeCapability(volCap, ""); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	// A mode the driver does not support is the CSI spec's "Exceeds
	// capabilities" of the node service: FailedPrecondition.
	if err := s.d.checkAccessMode(volCap.GetAccessMode().GetMode()); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%s: %v", method, err)
	}
	if csiutil.IsEphemeral(req.GetVolumeContext()) {
		return s.publishEphemeral(id, target, volCap, req.GetReadonly())
	}
	staging, err := checkMountPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v (this plugin stages volumes)", method, err)
	}
	mode := volCap.GetAccessMode().GetMode()
	block := volCap.GetBlock() != nil

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	kind, err := d.existingKind(method, id, volCap)
	if err != nil {
		return nil, err
	}
	rec, ok := d.state.Staged[id]
	if !ok || rec.StagingPath != staging {
		return nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s is not staged at %s", method, id, staging)
	}
	if rec.Block != block {
		return nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s was staged with access type %s", method, id, accessTypeName(rec.Block))
	}
	want := &publishRecord{
		Readonly:   req.GetReadonly() || isReadOnly(mode) || rec.Readonly || req.GetPublishContext()[PublishContextReadonly] == "true",
		AccessMode: mode.String(),
		Block:      block,
	}
	if kind == kindDirectory {
		// A block volume's file system got its mount flags when it was
		// mounted on the staging path, and file system specific ones
		// would not do for a bind mount. A directory volume's staging
		// mount is a plain bind mount.
		want.MountFlags = volCap.GetMount().GetMountFlags()
	}
	device := ""
	if kind == kindBlock {
		if device, err = d.publishedDevice(method, id, req.GetPublishContext(), rec.Device); err != nil {
			return nil, err
		}
		if device != rec.Device {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s was staged with device %s, not %s", method, id, rec.Device, device)
		}
	}
	ident, err := d.identify(id, kind, device)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if !block {
		if m, err := mountOf(staging, ident); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		} else if !m.ours() {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: staging path %s no longer holds volume %s", method, staging, id)
		}
	}
	targets := d.state.Published[id]
	for other, p := range targets {
		if other != target && (mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER ||
			modeFromName(p.AccessMode) == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER) {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: volume %s is single-writer and already published at %s", method, id, other)
		}
	}

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
		source := staging
		if block {
			// The device node itself reaches the pod. A read-only bind
			// mount of a device node does not stop writes to the
			// device; the pod's runtime enforces read-only devices.
			source = device
			if err := createTargetFile(target); err != nil {
				return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
			}
		} else {
			if err := os.MkdirAll(target, 0o750); err != nil {
				return nil, status.Errorf(codes.Internal, "%s: create target path: %v", method, err)
			}
		}
		if err := d.bindMount(source, target, want.Readonly, want.MountFlags); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	if targets == nil {
		targets = map[string]*publishRecord{}
		d.state.Published[id] = targets
	}
	if have, ok := targets[target]; ok && have.CreatedTarget {
		want.CreatedTarget = true // a repeated publish: still the plugin's
	}
	targets[target] = want
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// createTargetFile creates the file a block volume's device is bind-mounted
// onto. The CO creates the parent directory; an empty directory at the
// target itself (left by a CO that treats every target alike) is replaced.
func createTargetFile(target string) error {
	if fi, err := os.Lstat(target); err == nil && fi.IsDir() {
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("target path %s is a directory that cannot be replaced by a file: %w", target, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create target directory: %w", err)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o660)
	if err != nil {
		return fmt.Errorf("create target file: %w", err)
	}
	return f.Close()
}

func accessTypeName(block bool) string {
	if block {
		return "block"
	}
	return "mount"
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	const method = "NodeUnpublishVolume"
	resp, err := s.unpublish(method, req)
	if err == nil && s.d.cfg.NoStage {
		err = s.unstageUnpublished(method, req.GetVolumeId())
	}
	return resp, err
}

// unpublish is NodeUnpublishVolume without the --no-stage unstaging.
func (s *nodeServer) unpublish(method string, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	target, err := checkMountPath(req.GetTargetPath(), "target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	published, recorded := d.state.Published[id][target]
	device := ""
	if rec, ok := d.state.Staged[id]; ok {
		device = rec.Device
	}
	ident, err := d.identifyExisting(id, device)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if err := d.unmountVolume(method, target, ident, recorded); err != nil {
		return nil, err
	}
	// The CSI spec: "The SP MUST delete the file or directory it created
	// at this path" (csi.proto, NodeUnpublishVolumeRequest.target_path),
	// and only that: a target the plugin did not create (one the CO
	// made, or a path where this volume was never published, which is
	// answered OK as the spec's idempotency asks) stays, with whatever a
	// user keeps there. Remove, not RemoveAll: a created directory that
	// is not empty means something is wrong, and its contents are not
	// the plugin's to delete.
	if recorded && published.CreatedTarget {
		if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Errorf(codes.Internal, "%s: remove target path: %v", method, err)
		}
	}
	if recorded {
		delete(d.state.Published[id], target)
		if len(d.state.Published[id]) == 0 {
			delete(d.state.Published, id)
		}
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	// An ephemeral volume goes with its last publication.
	if err := d.deleteEphemeralIfUnused(id); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats reports statfs figures (bytes and inodes) for a
// mounted volume, and the device size for a block-access one.
func (s *nodeServer) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	const method = "NodeGetVolumeStats"
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	if path == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: volume path is required", method)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	ident, st, err := d.mountedVolume(method, id, path)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		size, err := blockDeviceSize(ident.device)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: size}}}, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: statfs %s: %v", method, path, err)
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

// NodeExpandVolume makes the node's view of a block volume follow
// ControllerExpandVolume: the loop device takes on the grown image's size,
// then the mounted file system grows online. A directory volume has
// nothing to grow.
func (s *nodeServer) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	const method = "NodeExpandVolume"
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	if path == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: volume path is required", method)
	}
	if r := req.GetCapacityRange(); r != nil {
		if err := checkRange(r); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
		}
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := s.d.checkCapability(c, ""); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
		}
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	ident, st, err := d.mountedVolume(method, id, path)
	if err != nil {
		return nil, err
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := checkVolumeCapability(c, ident.kind); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
		}
	}
	required := req.GetCapacityRange().GetRequiredBytes()
	if ident.kind == kindDirectory {
		return &csi.NodeExpandVolumeResponse{CapacityBytes: required}, nil
	}
	if err := setLoopCapacity(ident.device); err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	size, err := blockDeviceSize(ident.device)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if required > size {
		return nil, status.Errorf(codes.OutOfRange, "%s: volume %s has %d bytes, less than the required %d: ControllerExpandVolume must grow it first", method, id, size, required)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		if err := d.growMounted(id, ident.device, path); err != nil {
			return nil, status.Errorf(codes.Internal, "%s: volume %s: %v", method, id, err)
		}
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

// mountedVolume checks that path is a mount of volume id (a file system
// mount, or a bind-mounted device node for access type block) and returns
// the volume's identity and path's stat. Errors are gRPC statuses: NotFound
// for a volume that does not exist or is not at path.
func (d *Driver) mountedVolume(method, id, path string) (volumeIdentity, *unix.Stat_t, error) {
	kind, ok, err := d.volumeKindOf(id)
	if err != nil {
		return volumeIdentity{}, nil, err
	}
	if !ok {
		return volumeIdentity{}, nil, status.Errorf(codes.NotFound, "%s: volume %s does not exist", method, id)
	}
	device := ""
	if rec, ok := d.state.Staged[id]; ok {
		device = rec.Device
	}
	ident, err := d.identify(id, kind, device)
	if err != nil {
		return volumeIdentity{}, nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	m, err := mountOf(path, ident)
	if err != nil {
		return volumeIdentity{}, nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if !m.ours() {
		return volumeIdentity{}, nil, status.Errorf(codes.NotFound, "%s: %s is not a mount of volume %s", method, path, id)
	}
	return ident, m.stat, nil
}

// existingKind finds the kind of an existing volume and checks the
// capability against it. Errors are gRPC statuses.
func (d *Driver) existingKind(method, id string, c *csi.VolumeCapability) (volumeKind, error) {
	kind, ok, err := d.volumeKindOf(id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", status.Errorf(codes.NotFound, "%s: volume %s does not exist", method, id)
	}
	if err := checkVolumeCapability(c, kind); err != nil {
		return "", status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	return kind, nil
}

// publishedDevice returns the loop device of block volume id from the
// publish context (or fallback, the device it was staged with, if the
// context names none), after checking that it really is that volume's:
// the node formats what it gets. Errors are gRPC statuses.
func (d *Driver) publishedDevice(method, id string, publishContext map[string]string, fallback string) (string, error) {
	dev := publishContext[PublishContextDevicePath]
	if dev == "" {
		dev = fallback
	}
	if dev == "" {
		return "", status.Errorf(codes.FailedPrecondition, "%s: the publish context has no %q: a block volume must be attached by ControllerPublishVolume first", method, PublishContextDevicePath)
	}
	if err := checkLoopDevice(dev, d.volumeImage(id)); err != nil {
		if errors.Is(err, errNotOurDevice) {
			return "", status.Errorf(codes.FailedPrecondition, "%s: volume %s: %v", method, id, err)
		}
		return "", status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return dev, nil
}

// volumeIdentity is what tells the mounts of a volume from any others.
type volumeIdentity struct {
	kind volumeKind
	// dirDev and dirIno identify a directory volume's backend directory:
	// a bind mount's root has the device and inode of its source, which
	// identifies the volume without parsing mount sources.
	dirDev, dirIno uint64
	// device and rdev are a block volume's loop device and its number;
	// files on the file system in it have that device number, and the
	// node bind-mounted for access type block is that device. Empty if
	// no loop device is attached.
	device string
	rdev   uint64
}

// matches reports whether st, the stat of a mount point, shows the volume.
func (v volumeIdentity) matches(st *unix.Stat_t) bool {
	switch {
	case v.kind == kindDirectory && (v.dirDev != 0 || v.dirIno != 0):
		return st.Dev == v.dirDev && st.Ino == v.dirIno
	case v.kind == kindBlock && v.rdev != 0:
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			return st.Rdev == v.rdev
		}
		return st.Dev == v.rdev
	}
	return false
}

// identify finds what identifies volume id of the given kind. For a block
// volume, device is the loop device the caller believes in; if it is not
// (or no longer) the volume's, the kernel's list of loop devices is
// searched. A volume whose backing is gone has an identity that matches
// nothing.
func (d *Driver) identify(id string, kind volumeKind, device string) (volumeIdentity, error) {
	ident := volumeIdentity{kind: kind}
	switch kind {
	case kindDirectory:
		var st unix.Stat_t
		err := unix.Stat(d.volumeDir(id), &st)
		if errors.Is(err, unix.ENOENT) {
			return ident, nil
		}
		if err != nil {
			return ident, fmt.Errorf("stat volume %s: %w", id, err)
		}
		ident.dirDev, ident.dirIno = st.Dev, st.Ino
	case kindBlock:
		image := d.volumeImage(id)
		if device == "" || checkLoopDevice(device, image) != nil {
			var err error
			if device, err = findLoop(image); err != nil {
				return ident, err
			}
		}
		if device == "" {
			return ident, nil
		}
		rdev, err := deviceRdev(device)
		if err != nil {
			return ident, err
		}
		ident.device, ident.rdev = device, rdev
	}
	return ident, nil
}

// identifyExisting is identify for calls that may come after the volume
// was deleted; such a volume's identity matches nothing.
func (d *Driver) identifyExisting(id, device string) (volumeIdentity, error) {
	kind, ok, err := d.volumeKindOf(id)
	if err != nil || !ok {
		return volumeIdentity{}, err
	}
	return d.identify(id, kind, device)
}

// mountState says what is mounted on a path.
type mountState struct {
	mounted bool
	// isVolume: the path shows the volume (see volumeIdentity).
	isVolume bool
	stat     *unix.Stat_t
}

func (m mountState) ours() bool { return m.mounted && m.isVolume }

// mountOf tells whether path is a mount point and whether it shows the
// volume.
func mountOf(path string, ident volumeIdentity) (mountState, error) {
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
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return mountState{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return mountState{mounted: true, isVolume: ident.matches(&st), stat: &st}, nil
}

// unmountVolume unmounts path until nothing is mounted there. It refuses to
// unmount something that is neither shown to be the volume nor recorded as
// mounted by this plugin. Errors are gRPC statuses prefixed with method.
func (d *Driver) unmountVolume(method, path string, ident volumeIdentity, recorded bool) error {
	for range maxStackedMounts {
		m, err := mountOf(path, ident)
		if err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		if !m.mounted {
			return nil
		}
		if !m.ours() && !recorded {
			return status.Errorf(codes.FailedPrecondition, "%s: %s holds a mount that is not this volume", method, path)
		}
		if err := unmount(path); err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
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
