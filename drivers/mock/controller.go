package mock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/csisim/csisim/drivers/csiutil"
)

// DefaultVolumeSize is the size of a volume created without a required
// size (clamped to the limit, if one is given).
const DefaultVolumeSize int64 = 1 << 30

// PublishContextDevice is the publish_context key ControllerPublishVolume
// fills with the volume's (imaginary) device on the node. Node drivers that
// share the backend check that the CO passes it on unchanged.
const PublishContextDevice = "mock.csisim.io/device"

// maxIDLength is the CSI size limit of a volume ID.
const maxIDLength = 128

// controllerServer serves the CSI Controller service on the backend.
type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Driver
	b *Backend
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	types := []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
		csi.ControllerServiceCapability_RPC_GET_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
	}
	if !s.d.cfg.NoAttach {
		types = append(types, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	}
	// Unlimited capacity has no meaningful number to report, so the
	// capability is only offered when there is a limit.
	if _, capacity := s.b.Usage(); capacity > 0 {
		types = append(types, csi.ControllerServiceCapability_RPC_GET_CAPACITY)
	}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, t := range types {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// volumeIDFor derives the volume ID from the requested name, so that a
// retried CreateVolume, even one reaching another controller on the same
// backend, lands on the same volume. Names too long for an ID are hashed.
func volumeIDFor(name string) string {
	const prefix = "mock-"
	if len(prefix)+len(name) <= maxIDLength {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:16])
}

// sizeFor picks the size for a capacity range.
func sizeFor(r *csi.CapacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case req < 0 || limit < 0:
		return 0, fmt.Errorf("capacity range must not be negative (required %d, limit %d)", req, limit)
	case limit > 0 && req > limit:
		return 0, fmt.Errorf("required bytes %d exceed limit bytes %d", req, limit)
	case req > 0:
		return req, nil
	case limit > 0 && limit < DefaultVolumeSize:
		return limit, nil
	}
	return DefaultVolumeSize, nil
}

func (s *controllerServer) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: name is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: volume capabilities are required")
	}
	block := false
	for i, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: capability %d: %v", i+1, err)
		}
		block = block || c.GetBlock() != nil
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: volume content sources (snapshots, clones) are not supported")
	}
	if err := csiutil.CheckMutableParameters(req.GetMutableParameters()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}
	size, err := sizeFor(req.GetCapacityRange())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}

	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.byName[name]; ok {
		v := b.volumes[id]
		if !csiutil.Fits(v.capacityBytes, req.GetCapacityRange()) {
			return nil, status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with %d bytes, outside the requested range", name, v.capacityBytes)
		}
		if v.block != block {
			return nil, status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with block access %t, this request asks for %t", name, v.block, block)
		}
		return &csi.CreateVolumeResponse{Volume: v.csiVolume()}, nil
	}
	id := volumeIDFor(name)
	if other, ok := b.volumes[id]; ok {
		return nil, status.Errorf(codes.Internal, "CreateVolume: volume ID %s of name %q collides with volume %q", id, name, other.name)
	}
	if b.capacity > 0 {
		// A volume larger than the whole backend can never be made; one
		// that does not fit now might once others are deleted.
		if size > b.capacity {
			return nil, status.Errorf(codes.OutOfRange, "CreateVolume: %d bytes exceed the backend's total capacity of %d bytes", size, b.capacity)
		}
		if b.used+size > b.capacity {
			return nil, status.Errorf(codes.ResourceExhausted, "CreateVolume: %d bytes requested, %d of %d bytes free", size, b.capacity-b.used, b.capacity)
		}
	}
	v := &volume{id: id, name: name, capacityBytes: size, block: block, published: map[string]*controllerPub{},
		mutable: maps.Clone(req.GetMutableParameters())}
	b.volumes[id] = v
	b.byName[name] = id
	b.used += size
	return &csi.CreateVolumeResponse{Volume: v.csiVolume()}, nil
}

func (v *volume) csiVolume() *csi.Volume {
	return &csi.Volume{VolumeId: v.id, CapacityBytes: v.capacityBytes}
}

// inUse describes why a volume cannot be deleted, or returns "" if it can;
// the caller holds mu.
func (b *Backend) inUse(id string) string {
	if v := b.volumes[id]; v != nil && len(v.published) > 0 {
		return fmt.Sprintf("controller-published to %v", slices.Sorted(maps.Keys(v.published)))
	}
	for _, nodeID := range slices.Sorted(maps.Keys(b.nodes)) {
		n := b.nodes[nodeID]
		if s, ok := n.staged[id]; ok {
			return fmt.Sprintf("staged on node %s at %s", nodeID, s.path)
		}
		if t := n.published[id]; len(t) > 0 {
			return fmt.Sprintf("published on node %s at %v", nodeID, slices.Sorted(maps.Keys(t)))
		}
	}
	return ""
}

func (s *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "DeleteVolume: volume ID is required")
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.volumes[id]
	if !ok {
		// Deleting what is gone succeeds: the CO may be retrying a
		// delete whose answer it lost.
		return &csi.DeleteVolumeResponse{}, nil
	}
	if why := b.inUse(id); why != "" {
		return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume: volume %s is in use: %s", id, why)
	}
	delete(b.volumes, id)
	delete(b.byName, v.name)
	b.used -= v.capacityBytes
	return &csi.DeleteVolumeResponse{}, nil
}

func (s *controllerServer) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if s.d.cfg.NoAttach {
		return nil, status.Error(codes.Unimplemented, "ControllerPublishVolume: this driver does not have PUBLISH_UNPUBLISH_VOLUME")
	}
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "ControllerPublishVolume: volume ID is required")
	case nodeID == "":
		return nil, status.Error(codes.InvalidArgument, "ControllerPublishVolume: node ID is required")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()

	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: volume %s does not exist", id)
	}
	if err := checkAccessType(v, req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume: %v", err)
	}
	limit := s.d.cfg.MaxVolumesPerNode
	if b.knowsNodes() {
		n, ok := b.nodes[nodeID]
		if !ok || !n.registered {
			return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: node %s does not exist", nodeID)
		}
		limit = n.maxVolumes
	}
	want := &controllerPub{readonly: req.GetReadonly(), mode: mode.String(), device: "/dev/mock/" + id}
	resp := &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{PublishContextDevice: want.device}}
	if have, ok := v.published[nodeID]; ok {
		if *have != *want {
			return nil, status.Errorf(codes.AlreadyExists, "ControllerPublishVolume: volume %s is already published to node %s with readonly=%t, access mode %s", id, nodeID, have.readonly, have.mode)
		}
		return resp, nil
	}
	for _, other := range slices.Sorted(maps.Keys(v.published)) {
		if p := v.published[other]; csiutil.IsSingleNode(mode) || csiutil.IsSingleNode(csiutil.ModeFromName(p.mode)) {
			return nil, status.Errorf(codes.FailedPrecondition, "ControllerPublishVolume: volume %s is published to node %s with access mode %s and cannot also be published to node %s", id, other, p.mode, nodeID)
		}
	}
	if limit > 0 && b.publishedTo(nodeID) >= limit {
		return nil, status.Errorf(codes.ResourceExhausted, "ControllerPublishVolume: node %s already has the maximum of %d volumes", nodeID, limit)
	}
	v.published[nodeID] = want
	return resp, nil
}

func (s *controllerServer) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if s.d.cfg.NoAttach {
		return nil, status.Error(codes.Unimplemented, "ControllerUnpublishVolume: this driver does not have PUBLISH_UNPUBLISH_VOLUME")
	}
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerUnpublishVolume: volume ID is required")
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	// A volume or node that is gone is unpublished as far as anyone can
	// tell; the spec asks for OK then, so that the CO can finish.
	if v, ok := b.volumes[id]; ok {
		if nodeID == "" {
			clear(v.published) // no node ID: from every node
		} else {
			delete(v.published, nodeID)
		}
	}
	// The detach takes the volume away from the node: whatever the node
	// had staged or published of it goes too, as a device vanishes from a
	// machine. A healthy node unstaged first; a dead one never will, and
	// its stale use must not keep the volume from the next node.
	for name, n := range b.nodes {
		if nodeID == "" || name == nodeID {
			delete(n.staged, id)
			delete(n.published, id)
		}
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (s *controllerServer) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ValidateVolumeCapabilities: volume ID is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "ValidateVolumeCapabilities: volume capabilities are required")
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ValidateVolumeCapabilities: volume %s does not exist", id)
	}
	// An unsupported capability is an answer, not an error: the
	// response simply confirms nothing and says why.
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
		if err := checkAccessType(v, c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

func (s *controllerServer) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "ListVolumes: max entries must not be negative, got %d", req.GetMaxEntries())
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := slices.Sorted(maps.Keys(b.volumes))
	// The token is the index of the next entry: good enough for a list
	// that is sorted, and the spec only asks that a bad one be refused.
	start := 0
	if tok := req.GetStartingToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(ids) {
			return nil, status.Errorf(codes.Aborted, "ListVolumes: invalid starting token %q", tok)
		}
		start = n
	}
	end := len(ids)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csi.ListVolumesResponse{}
	for _, id := range ids[start:end] {
		v := b.volumes[id]
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{
			Volume: v.csiVolume(),
			Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: slices.Sorted(maps.Keys(v.published))},
		})
	}
	if end < len(ids) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

// ControllerExpandVolume grows a volume in the backend, within the
// backend's capacity; growing never shrinks it, so a smaller request
// answers with the size it has. A volume for a filesystem needs
// NodeExpandVolume afterwards, as the filesystem on it would not have
// grown with it; a block volume does not. The mock allows it while the
// volume is published (plugin capability VolumeExpansion ONLINE).
func (s *controllerServer) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	const method = "ControllerExpandVolume"
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: volume ID is required", method)
	}
	r := req.GetCapacityRange()
	if r == nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: capacity range is required", method)
	}
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 || (limit > 0 && required > limit) {
		return nil, status.Errorf(codes.InvalidArgument, "%s: invalid capacity range (required %d, limit %d)", method, required, limit)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s does not exist", method, id)
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := checkAccessType(v, c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
		}
	}
	if limit > 0 && v.capacityBytes > limit {
		return nil, status.Errorf(codes.OutOfRange, "%s: volume %s has %d bytes, more than the limit of %d", method, id, v.capacityBytes, limit)
	}
	if grow := required - v.capacityBytes; grow > 0 {
		if b.capacity > 0 && b.used+grow > b.capacity {
			return nil, status.Errorf(codes.OutOfRange, "%s: %d more bytes requested, %d of %d bytes free", method, grow, b.capacity-b.used, b.capacity)
		}
		v.capacityBytes = required
		b.used += grow
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: v.capacityBytes, NodeExpansionRequired: !v.block}, nil
}

// ControllerModifyVolume applies a volume's new mutable parameters, which
// csiutil.CheckMutableParameters checks: an unknown key is InvalidArgument,
// the claim's Infeasible modify.
func (s *controllerServer) ControllerModifyVolume(_ context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerModifyVolume: volume ID is required")
	}
	if err := csiutil.CheckMutableParameters(req.GetMutableParameters()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerModifyVolume: %v", err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerModifyVolume: volume %s does not exist", id)
	}
	if v.mutable == nil {
		v.mutable = map[string]string{}
	}
	maps.Copy(v.mutable, req.GetMutableParameters())
	return &csi.ControllerModifyVolumeResponse{}, nil
}

func (s *controllerServer) ControllerGetVolume(_ context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerGetVolume: volume ID is required")
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerGetVolume: volume %s does not exist", id)
	}
	return &csi.ControllerGetVolumeResponse{
		Volume: v.csiVolume(),
		Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: slices.Sorted(maps.Keys(v.published))},
	}, nil
}

func (s *controllerServer) GetCapacity(context.Context, *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	used, capacity := s.b.Usage()
	if capacity == 0 {
		return nil, status.Error(codes.Unimplemented, "GetCapacity: the backend has no capacity limit")
	}
	free := capacity - used
	return &csi.GetCapacityResponse{AvailableCapacity: free, MaximumVolumeSize: wrapperspb.Int64(free)}, nil
}
