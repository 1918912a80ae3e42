package hostpath

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TopologyKeyNode is the topology segment NodeGetInfo reports, naming the
// node.
const TopologyKeyNode = "topology.hostpath.csisim.io/node"

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
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
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

// NodeGetInfo reports the node's volume limit as the backend has it now:
// the plugin's --max-volumes-per-node unless it was changed since
// (SetNodeVolumeLimit).
func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	n := nodeRecord{NodeID: s.d.cfg.NodeID, Zone: s.d.cfg.Zone}
	limit := s.d.cfg.MaxVolumesPerNode
	rec, ok, err := lookupNode(s.d.root, s.d.cfg.NodeID)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodeGetInfo: %v", err)
	}
	if ok {
		limit = rec.MaxVolumesPerNode
	}
	resp := &csi.NodeGetInfoResponse{NodeId: s.d.cfg.NodeID, MaxVolumesPerNode: limit}
	if !s.d.cfg.NoTopology {
		resp.AccessibleTopology = &csi.Topology{Segments: n.segments()}
	}
	return resp, nil
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

// checkUnmountRequest checks the volume ID and the path (what names it in
// errors) of an unstage or unpublish request and returns the path cleaned.
// Errors are gRPC statuses.
func checkUnmountRequest(method, id, path, what string) (string, error) {
	if err := checkVolumeID(id); err != nil {
		return "", status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	p, err := checkMountPath(path, what)
	if err != nil {
		return "", status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	return p, nil
}

// checkMountRequest is checkUnmountRequest for a stage or publish request,
// which also names a capability the driver must support.
func (d *Driver) checkMountRequest(method, id, path, what string, volCap *csi.VolumeCapability) (string, error) {
	p, err := checkUnmountRequest(method, id, path, what)
	if err != nil {
		return "", err
	}
	if err := checkVolumeCapability(volCap, ""); err != nil {
		return "", status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	// A mode the driver does not support is the CSI spec's "Exceeds
	// capabilities" of the node service: FailedPrecondition.
	if err := d.checkAccessMode(volCap.GetAccessMode().GetMode()); err != nil {
		return "", status.Errorf(codes.FailedPrecondition, "%s: %v", method, err)
	}
	return p, nil
}
