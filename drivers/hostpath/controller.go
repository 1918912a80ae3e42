package hostpath

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultCapacityBytes is the capacity of a volume created without a
// required size.
const defaultCapacityBytes int64 = 1 << 30

// PublishContextNodeKey is the publish_context key ControllerPublishVolume
// fills with the node the volume was published to.
const PublishContextNodeKey = "hostpath.csisim.io/node"

// controllerServer serves the CSI Controller service. Volumes are
// directories, so "capacity" is a promise that is recorded, not reserved.
type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Driver
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (s *controllerServer) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := checkName(req.GetName()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: volume capabilities are required")
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
		}
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: volume content sources (snapshots, clones) are not supported")
	}
	capacity, err := capacityFor(req.GetCapacityRange())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	id := volumeIDFor(req.GetName())
	if v, ok := d.state.Volumes[id]; ok {
		if v.Name != req.GetName() {
			return nil, status.Errorf(codes.Internal, "CreateVolume: volume id %s of name %q collides with volume %q", id, req.GetName(), v.Name)
		}
		if !fits(v.CapacityBytes, req.GetCapacityRange()) {
			return nil, status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with capacity %d bytes, which does not fit the requested range", v.Name, v.CapacityBytes)
		}
		return &csi.CreateVolumeResponse{Volume: v.csiVolume()}, nil
	}

	// Directory first, record second: a crash in between leaves a directory
	// that the retried call, which derives the same ID, adopts.
	if err := os.MkdirAll(d.volumeDir(id), 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume: create volume directory: %v", err)
	}
	// MkdirAll is subject to the umask; pods of any user must be able to
	// write, as on a freshly formatted file system root.
	if err := os.Chmod(d.volumeDir(id), 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume: set volume directory mode: %v", err)
	}
	v := &volumeRecord{ID: id, Name: req.GetName(), CapacityBytes: capacity}
	d.state.Volumes[id] = v
	if err := d.store.save(d.state); err != nil {
		delete(d.state.Volumes, id)
		return nil, status.Errorf(codes.Internal, "CreateVolume: %v", err)
	}
	return &csi.CreateVolumeResponse{Volume: v.csiVolume()}, nil
}

func (s *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "DeleteVolume: %v", err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	if v, ok := d.state.Volumes[id]; ok && len(v.PublishedNodes) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume: volume %s is still published to node(s) %s", id, strings.Join(v.publishedNodeIDs(), ", "))
	}
	// Directory first, record second, so that a crash in between leaves a
	// record whose retried delete finishes the job.
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume: remove volume directory: %v", err)
	}
	if _, ok := d.state.Volumes[id]; ok {
		delete(d.state.Volumes, id)
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteVolume: %v", err)
		}
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (s *controllerServer) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	if err := checkNodeID(nodeID); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	v, ok := d.state.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: volume %s does not exist", id)
	}
	node, ok, err := lookupNode(d.cfg.Root, nodeID)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "ControllerPublishVolume: %v", err)
	}
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: node %s does not exist (no node plugin has registered it)", nodeID)
	}
	want := &controllerPublishRecord{Readonly: req.GetReadonly(), AccessMode: mode.String()}
	resp := &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{PublishContextNodeKey: nodeID}}

	if have, ok := v.PublishedNodes[nodeID]; ok {
		if *have != *want {
			return nil, status.Errorf(codes.AlreadyExists, "ControllerPublishVolume: volume %s is already published to node %s with readonly=%t, access mode %s", id, nodeID, have.Readonly, have.AccessMode)
		}
		return resp, nil
	}
	for other, p := range v.PublishedNodes {
		if isSingleNode(mode) || isSingleNode(modeFromName(p.AccessMode)) {
			return nil, status.Errorf(codes.FailedPrecondition, "ControllerPublishVolume: volume %s is published to node %s with access mode %s and cannot also be published to node %s", id, other, p.AccessMode, nodeID)
		}
	}
	if max := node.MaxVolumesPerNode; max > 0 && d.publishedTo(nodeID) >= max {
		return nil, status.Errorf(codes.ResourceExhausted, "ControllerPublishVolume: node %s already has the maximum of %d volumes", nodeID, max)
	}

	if v.PublishedNodes == nil {
		v.PublishedNodes = map[string]*controllerPublishRecord{}
	}
	v.PublishedNodes[nodeID] = want
	if err := d.store.save(d.state); err != nil {
		delete(v.PublishedNodes, nodeID)
		return nil, status.Errorf(codes.Internal, "ControllerPublishVolume: %v", err)
	}
	return resp, nil
}

// publishedTo counts the volumes published to a node; the caller holds mu.
func (d *Driver) publishedTo(nodeID string) int64 {
	var n int64
	for _, v := range d.state.Volumes {
		if _, ok := v.PublishedNodes[nodeID]; ok {
			n++
		}
	}
	return n
}

func (s *controllerServer) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerUnpublishVolume: %v", err)
	}
	if nodeID != "" {
		if err := checkNodeID(nodeID); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ControllerUnpublishVolume: %v", err)
		}
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	v, ok := d.state.Volumes[id]
	if !ok || len(v.PublishedNodes) == 0 {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	before := v.PublishedNodes
	v.PublishedNodes = map[string]*controllerPublishRecord{}
	for n, p := range before {
		// An empty node ID means "from every node".
		if nodeID != "" && n != nodeID {
			v.PublishedNodes[n] = p
		}
	}
	if len(v.PublishedNodes) == len(before) {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	if err := d.store.save(d.state); err != nil {
		v.PublishedNodes = before
		return nil, status.Errorf(codes.Internal, "ControllerUnpublishVolume: %v", err)
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (s *controllerServer) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ValidateVolumeCapabilities: %v", err)
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "ValidateVolumeCapabilities: volume capabilities are required")
	}
	d := s.d
	d.mu.Lock()
	_, ok := d.state.Volumes[id]
	d.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ValidateVolumeCapabilities: volume %s does not exist", id)
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{
		Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeContext:      req.GetVolumeContext(),
			VolumeCapabilities: req.GetVolumeCapabilities(),
			Parameters:         req.GetParameters(),
		},
	}, nil
}

// ListVolumes pages through the volumes in ID order. The next token is the
// last ID returned, so a page stays valid when volumes are created or
// deleted between calls.
func (s *controllerServer) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "ListVolumes: max_entries must not be negative, got %d", req.GetMaxEntries())
	}
	after := req.GetStartingToken()
	if after != "" && !isVolumeIDWeMake(after) {
		return nil, status.Errorf(codes.Aborted, "ListVolumes: starting token %q is not one this plugin returned", after)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	ids := make([]string, 0, len(d.state.Volumes))
	for id := range d.state.Volumes {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	resp := &csi.ListVolumesResponse{}
	if max := int(req.GetMaxEntries()); max > 0 && len(ids) > max {
		ids = ids[:max]
		resp.NextToken = ids[max-1]
	}
	for _, id := range ids {
		v := d.state.Volumes[id]
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{
			Volume: v.csiVolume(),
			Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: v.publishedNodeIDs()},
		})
	}
	return resp, nil
}

// GetCapacity reports the free space of the file system holding the root:
// the most any one volume could ever hold.
func (s *controllerServer) GetCapacity(_ context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	for _, c := range req.GetVolumeCapabilities() {
		if checkCapability(c) != nil {
			// No volume with that capability can be provisioned.
			return &csi.GetCapacityResponse{AvailableCapacity: 0}, nil
		}
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(s.d.volumesDir(), &fs); err != nil {
		return nil, status.Errorf(codes.Internal, "GetCapacity: statfs %s: %v", s.d.volumesDir(), err)
	}
	return &csi.GetCapacityResponse{AvailableCapacity: int64(fs.Bavail) * fs.Bsize}, nil
}

// csiVolume is the CSI view of a record. The volume context names the
// backing kind only; nothing in it is secret.
func (v *volumeRecord) csiVolume() *csi.Volume {
	return &csi.Volume{
		VolumeId:      v.ID,
		CapacityBytes: v.CapacityBytes,
		VolumeContext: map[string]string{"hostpath.csisim.io/kind": "directory"},
	}
}

func (v *volumeRecord) publishedNodeIDs() []string {
	ids := make([]string, 0, len(v.PublishedNodes))
	for n := range v.PublishedNodes {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids
}

// isVolumeIDWeMake reports whether s has the shape of volumeIDFor's output.
func isVolumeIDWeMake(s string) bool {
	hexPart, ok := strings.CutPrefix(s, volumeIDPrefix)
	if !ok || len(hexPart) != 20 {
		return false
	}
	for _, c := range hexPart {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// capacityFor picks the capacity of a new volume: the required size, or the
// default when none is required, capped by the limit.
func capacityFor(r *csi.CapacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || limit < 0 {
		return 0, fmt.Errorf("capacity range must not be negative (required %d, limit %d)", req, limit)
	}
	if limit > 0 && req > limit {
		return 0, fmt.Errorf("required bytes %d exceed limit bytes %d", req, limit)
	}
	switch {
	case req > 0:
		return req, nil
	case limit > 0 && limit < defaultCapacityBytes:
		return limit, nil
	}
	return defaultCapacityBytes, nil
}

// fits reports whether an existing volume's capacity satisfies a range.
func fits(capacity int64, r *csi.CapacityRange) bool {
	if capacity < r.GetRequiredBytes() {
		return false
	}
	return r.GetLimitBytes() == 0 || capacity <= r.GetLimitBytes()
}

// checkCapability accepts mount access with any known access mode. Block
// access is refused: a directory cannot be a block device.
func checkCapability(c *csi.VolumeCapability) error {
	if c == nil {
		return fmt.Errorf("volume capability is required")
	}
	if c.GetBlock() != nil {
		return fmt.Errorf("block access is not supported: volumes are directories")
	}
	if c.GetMount() == nil {
		return fmt.Errorf("volume capability must have mount access type")
	}
	mode := c.GetAccessMode().GetMode()
	if _, known := csi.VolumeCapability_AccessMode_Mode_name[int32(mode)]; !known || mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		return fmt.Errorf("access mode %v is not supported", mode)
	}
	return nil
}

// isSingleNode reports whether an access mode allows one node only.
func isSingleNode(m csi.VolumeCapability_AccessMode_Mode) bool {
	switch m {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// modeFromName turns an access mode name, as stored in the state, back
// into the mode; unknown names give UNKNOWN.
func modeFromName(name string) csi.VolumeCapability_AccessMode_Mode {
	return csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[name])
}

// isReadOnly reports whether an access mode forbids writing.
func isReadOnly(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}
