package mock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/drivers/csiutil"
)

// nodeServer serves the CSI Node service for one node. Staging and
// publishing are records in the backend; nothing is mounted.
type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Driver
	b *Backend
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	types := []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_GET_VOLUME_STATS, csi.NodeServiceCapability_RPC_EXPAND_VOLUME}
	if !s.d.cfg.NoStageUnstage {
		types = append(types, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range types {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: s.d.cfg.NodeID, MaxVolumesPerNode: s.d.cfg.MaxVolumesPerNode}, nil
}

// checkCapability accepts a capability that names an access mode and an
// access type; the mock supports every combination.
func checkCapability(c *csi.VolumeCapability) error {
	switch {
	case c == nil:
		return errors.New("volume capability is required")
	case c.GetAccessMode() == nil || c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN:
		return errors.New("volume capability needs an access mode")
	case c.GetBlock() == nil && c.GetMount() == nil:
		return errors.New("volume capability needs an access type (block or mount)")
	}
	return nil
}

// checkAccessType refuses to use a volume created for mount access as a
// block device, or the other way round.
func checkAccessType(v *volume, c *csi.VolumeCapability) error {
	if block := c.GetBlock() != nil; block != v.block {
		return fmt.Errorf("volume %s was created for %s access, not %s", v.id, accessName(v.block), accessName(block))
	}
	return nil
}

func accessName(block bool) string {
	if block {
		return "block"
	}
	return "mount"
}

// checkPath accepts a CO-supplied absolute path and returns it cleaned.
func checkPath(p, what string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("%s is required", what)
	case !filepath.IsAbs(p):
		return "", fmt.Errorf("%s %q must be absolute", what, p)
	}
	return filepath.Clean(p), nil
}

// checkUsedPath accepts the path of a volume the CO says is staged or
// published there (NodeGetVolumeStats, NodeExpandVolume): any path but
// none; one where the volume is not gets NotFound from the caller, as the
// spec asks, a relative one included.
func checkUsedPath(p, what string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s is required", what)
	}
	return filepath.Clean(p), nil
}

// makeTarget creates target_path, which the spec leaves to the plugin
// (the CO makes its parent): a directory for a mount, a file for a block
// volume. The mock mounts nothing on it. Under a parent that does not
// exist (paths that are names only, as in runs without a filesystem)
// it makes nothing.
func makeTarget(target string, block bool) error {
	if _, err := os.Stat(filepath.Dir(target)); err != nil {
		return nil
	}
	if block {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return err
		}
		return f.Close()
	}
	if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// removeTarget removes what makeTarget made; a target that is not there,
// or a directory something else has filled, is left as it is.
func removeTarget(target string) {
	_ = os.Remove(target)
}

// lookUp returns the volume for a node call: an error if the backend knows
// the volumes and this one is not among them, nil volume if the backend
// cannot know (no controller shares it); the caller holds mu.
func (b *Backend) lookUp(method, id string, c *csi.VolumeCapability) (*volume, error) {
	if !b.knowsVolumes() {
		return nil, nil
	}
	v, ok := b.volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s does not exist", method, id)
	}
	if c != nil {
		if err := checkAccessType(v, c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
		}
	}
	return v, nil
}

// checkAttached refuses the first node call for a volume that the
// controller has not published to the node, when the driver attaches, and
// a publish context that is not the one the controller returned: a real
// node plugin would find no device; the caller holds mu.
func (b *Backend) checkAttached(method string, v *volume, nodeID string, publishContext map[string]string) error {
	if !b.attachRequired() || v == nil {
		return nil
	}
	p, ok := v.published[nodeID]
	if !ok {
		return status.Errorf(codes.FailedPrecondition, "%s: volume %s is not controller-published to node %s; ControllerPublishVolume must succeed first", method, v.id, nodeID)
	}
	if got := publishContext[PublishContextDevice]; got != p.device {
		return status.Errorf(codes.InvalidArgument, "%s: publish_context[%q] is %q, but ControllerPublishVolume returned %q", method, PublishContextDevice, got, p.device)
	}
	return nil
}

// checkOtherNodes refuses to use a volume on nodeID while another node uses
// it, if either use allows only one node. Only a shared backend sees the
// other nodes; the caller holds mu.
func (b *Backend) checkOtherNodes(method, id, nodeID string, mode csi.VolumeCapability_AccessMode_Mode) error {
	for _, other := range slices.Sorted(maps.Keys(b.nodes)) {
		if other == nodeID {
			continue
		}
		n := b.nodes[other]
		modes := []string{}
		if s, ok := n.staged[id]; ok {
			modes = append(modes, s.mode)
		}
		for _, p := range n.published[id] {
			modes = append(modes, p.mode)
		}
		for _, m := range modes {
			if isSingleNode(mode) || isSingleNode(modeOf(m)) {
				return status.Errorf(codes.FailedPrecondition, "%s: volume %s is in use on node %s with access mode %s and cannot also be used on node %s with %s", method, id, other, m, nodeID, mode)
			}
		}
	}
	return nil
}

func (s *nodeServer) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if s.d.cfg.NoStageUnstage {
		return nil, status.Error(codes.Unimplemented, "NodeStageVolume: this driver does not have STAGE_UNSTAGE_VOLUME")
	}
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeStageVolume: volume ID is required")
	}
	staging, err := checkPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume: %v", err)
	}
	c := req.GetVolumeCapability()
	if err := checkCapability(c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume: %v", err)
	}
	mode := c.GetAccessMode().GetMode()
	nodeID := s.d.cfg.NodeID

	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookUp("NodeStageVolume", id, c)
	if err != nil {
		return nil, err
	}
	if err := b.checkAttached("NodeStageVolume", v, nodeID, req.GetPublishContext()); err != nil {
		return nil, err
	}
	n := b.node(nodeID)
	want := &stageRec{path: staging, mode: mode.String(), block: c.GetBlock() != nil}
	if have, ok := n.staged[id]; ok {
		if have.path != staging {
			return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume: volume %s is already staged at %s", id, have.path)
		}
		if *have != *want {
			return nil, status.Errorf(codes.AlreadyExists, "NodeStageVolume: volume %s is already staged at %s with access mode %s, %s access", id, staging, have.mode, accessName(have.block))
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := b.checkOtherNodes("NodeStageVolume", id, nodeID, mode); err != nil {
		return nil, err
	}
	n.staged[id] = want
	return &csi.NodeStageVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if s.d.cfg.NoStageUnstage {
		return nil, status.Error(codes.Unimplemented, "NodeUnstageVolume: this driver does not have STAGE_UNSTAGE_VOLUME")
	}
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeUnstageVolume: volume ID is required")
	}
	staging, err := checkPath(req.GetStagingTargetPath(), "staging target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnstageVolume: %v", err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.node(s.d.cfg.NodeID)
	// Nothing staged at this path is success: the CO may be retrying an
	// unstage whose answer it lost, or cleaning up after a deleted volume.
	if have, ok := n.staged[id]; !ok || have.path != staging {
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	if targets := n.published[id]; len(targets) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "NodeUnstageVolume: volume %s is still published at %v; NodeUnpublishVolume must succeed first", id, slices.Sorted(maps.Keys(targets)))
	}
	delete(n.staged, id)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// isReadOnly reports whether an access mode only reads.
func isReadOnly(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}

func (s *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodePublishVolume: volume ID is required")
	}
	target, err := checkPath(req.GetTargetPath(), "target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v", err)
	}
	c := req.GetVolumeCapability()
	if err := checkCapability(c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v", err)
	}
	if csiutil.IsEphemeral(req.GetVolumeContext()) {
		return s.publishEphemeral(id, target, c, req.GetReadonly())
	}
	stages := !s.d.cfg.NoStageUnstage
	staging := ""
	if stages {
		// The spec's code for a missing staging path on a staging
		// driver is FAILED_PRECONDITION: the CO skipped NodeStageVolume.
		if req.GetStagingTargetPath() == "" {
			return nil, status.Error(codes.FailedPrecondition, "NodePublishVolume: staging target path not set; this driver has STAGE_UNSTAGE_VOLUME")
		}
		if staging, err = checkPath(req.GetStagingTargetPath(), "staging target path"); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume: %v", err)
		}
	}
	mode := c.GetAccessMode().GetMode()
	nodeID := s.d.cfg.NodeID
	want := &publishRec{staging: staging, readonly: req.GetReadonly() || isReadOnly(mode), mode: mode.String(), block: c.GetBlock() != nil}

	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookUp("NodePublishVolume", id, c)
	if err != nil {
		return nil, err
	}
	n := b.node(nodeID)
	if stages {
		if have, ok := n.staged[id]; !ok || have.path != staging {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume: volume %s is not staged at %s on node %s; NodeStageVolume must succeed first", id, staging, nodeID)
		}
	} else if err := b.checkAttached("NodePublishVolume", v, nodeID, req.GetPublishContext()); err != nil {
		return nil, err
	}
	targets := n.published[id]
	if have, ok := targets[target]; ok {
		if *have != *want {
			return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume: volume %s is already published at %s with readonly=%t, access mode %s", id, target, have.readonly, have.mode)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	// A single-writer publication excludes all others, so there is a
	// conflict if this one is single-writer and there are others, or if
	// the only other one is; no need to look at every target of a volume
	// published a thousand times.
	const ssw = csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	if len(targets) > 0 && (mode == ssw || len(targets) == 1) {
		other := slices.Min(slices.Collect(maps.Keys(targets)))
		if mode == ssw || modeOf(targets[other].mode) == ssw {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume: volume %s is single-writer and already published at %s", id, other)
		}
	}
	if err := b.checkOtherNodes("NodePublishVolume", id, nodeID, mode); err != nil {
		return nil, err
	}
	if err := makeTarget(target, want.block); err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume: creating target path: %v", err)
	}
	if targets == nil {
		targets = map[string]*publishRec{}
		n.published[id] = targets
	}
	targets[target] = want
	return &csi.NodePublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeUnpublishVolume: volume ID is required")
	}
	target, err := checkPath(req.GetTargetPath(), "target path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnpublishVolume: %v", err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.node(s.d.cfg.NodeID)
	// Nothing published at the target is success, for the same reasons
	// as in NodeUnstageVolume.
	if targets := n.published[id]; targets != nil {
		delete(targets, target)
		if len(targets) == 0 {
			delete(n.published, id)
		}
	}
	removeTarget(target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeGetVolumeStats: volume ID is required")
	}
	p, err := checkUsedPath(req.GetVolumePath(), "volume path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeGetVolumeStats: %v", err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookUp("NodeGetVolumeStats", id, nil)
	if err != nil {
		return nil, err
	}
	n := b.node(s.d.cfg.NodeID)
	_, published := n.published[id][p]
	if st, ok := n.staged[id]; !published && (!ok || st.path != p) {
		return nil, status.Errorf(codes.NotFound, "NodeGetVolumeStats: volume %s is neither staged nor published at %s", id, p)
	}
	var total int64
	if v != nil {
		total = v.capacityBytes
	}
	// The mock stores nothing, so every volume is empty.
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: total, Available: total},
	}}, nil
}

// NodeExpandVolume grows what the node sees of a volume staged or
// published here: nothing, as nothing is mounted, but the checks a node
// plugin makes. The volume must be at volume_path (a target, or its
// staging path), and, when the backend knows the volume, already as large
// as required: ControllerExpandVolume grows it first. The answer is the
// volume's capacity.
func (s *nodeServer) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	const method = "NodeExpandVolume"
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: volume ID is required", method)
	}
	p, err := checkUsedPath(req.GetVolumePath(), "volume path")
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
	}
	r := req.GetCapacityRange()
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 || (limit > 0 && required > limit) {
		return nil, status.Errorf(codes.InvalidArgument, "%s: invalid capacity range (required %d, limit %d)", method, required, limit)
	}
	c := req.GetVolumeCapability()
	if c != nil {
		if err := checkCapability(c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", method, err)
		}
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	v, err := b.lookUp(method, id, c)
	if err != nil {
		return nil, err
	}
	n := b.node(s.d.cfg.NodeID)
	_, published := n.published[id][p]
	if st, ok := n.staged[id]; !published && (!ok || st.path != p) {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s is neither staged nor published at %s", method, id, p)
	}
	if v == nil {
		return &csi.NodeExpandVolumeResponse{CapacityBytes: required}, nil
	}
	if required > v.capacityBytes {
		return nil, status.Errorf(codes.OutOfRange, "%s: volume %s has %d bytes, less than the required %d: ControllerExpandVolume must grow it first", method, id, v.capacityBytes, required)
	}
	if limit > 0 && v.capacityBytes > limit {
		return nil, status.Errorf(codes.OutOfRange, "%s: volume %s has %d bytes, more than the limit of %d", method, id, v.capacityBytes, limit)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: v.capacityBytes}, nil
}
