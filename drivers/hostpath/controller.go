package hostpath

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/csisim/csisim/drivers/csiutil"
)

// defaultCapacityBytes is the capacity of a volume created without a
// required size.
const defaultCapacityBytes int64 = 1 << 30

// minBlockCapacityBytes is the smallest block volume: mkfs.ext4 cannot make
// a file system on much less.
const minBlockCapacityBytes int64 = 1 << 20

// sectorSize is what the capacity of a block volume is rounded up to: a
// loop device ignores a partial sector at the end of its file.
const sectorSize int64 = 512

// controllerServer serves the CSI Controller service. Capacity is a number
// in a pool (see topology.go); a block volume's image has that size, but is
// sparse.
type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Driver
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
	} {
		if t == csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME && s.d.cfg.NoAttach {
			continue
		}
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (s *controllerServer) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	kind, params, err := s.d.checkCreateRequest(req)
	if err != nil {
		return nil, err
	}
	capacity, err := capacityFor(req.GetCapacityRange(), kind)
	if err != nil {
		return nil, err
	}
	src, err := parseContentSource(req.GetVolumeContentSource())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	id := volumeIDFor(req.GetName())
	if v, ok := d.state.Volumes[id]; ok {
		if d.cfg.BugNonIdempotentCreate {
			id = d.anotherVolumeID(req.GetName())
		} else {
			if err := v.matchesCreate(req, id, kind, src, params); err != nil {
				return nil, err
			}
			return &csi.CreateVolumeResponse{Volume: v.csiVolume()}, nil
		}
	}
	copyFrom, capacity, err := d.contentSourceCopy(src, kind, capacity, req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	requirements := req.GetAccessibilityRequirements()
	if d.cfg.NoTopology {
		// Not asked for: the CO sends none to a driver without
		// VOLUME_ACCESSIBILITY_CONSTRAINTS.
		requirements = nil
	}
	zone, err := d.placeVolume(requirements, capacity)
	if err != nil {
		return nil, err
	}

	// Backing first, record second: a crash in between leaves a volume
	// that the retried call, which derives the same ID, adopts.
	if err := d.createBacking(id, kind, capacity, copyFrom); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume: %v", err)
	}
	v := &volumeRecord{ID: id, Name: req.GetName(), Kind: kind, CapacityBytes: capacity, Zone: zone, Source: src, Parameters: params,
		MutableParameters: req.GetMutableParameters()}
	d.state.Volumes[id] = v
	if err := d.store.save(d.state); err != nil {
		delete(d.state.Volumes, id)
		return nil, status.Errorf(codes.Internal, "CreateVolume: %v", err)
	}
	return &csi.CreateVolumeResponse{Volume: v.csiVolume()}, nil
}

// anotherVolumeID is the deliberate bug of Config.BugNonIdempotentCreate:
// the ID of a new volume for a name that has one already, derived from the
// name and how many volumes have it (so that a run gives the same IDs every
// time), in the shape of volumeIDFor's. The caller holds d.mu.
func (d *Driver) anotherVolumeID(name string) string {
	for n := 2; ; n++ {
		id := volumeIDFor(fmt.Sprintf("%s#%d", name, n))
		if _, taken := d.state.Volumes[id]; !taken {
			return id
		}
	}
}

// checkCreateRequest checks a CreateVolume request's name, parameters and
// capabilities, and returns the volume's kind and parameters. Errors are
// gRPC statuses.
func (d *Driver) checkCreateRequest(req *csi.CreateVolumeRequest) (volumeKind, map[string]string, error) {
	if err := checkName(req.GetName()); err != nil {
		return "", nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}
	kind, params, err := parseParameters(req.GetParameters(), d.cfg.StrictParameters)
	if err != nil {
		return "", nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}
	if kind == kindBlock && d.cfg.NoAttach {
		return "", nil, status.Error(codes.InvalidArgument, "CreateVolume: kind block needs ControllerPublishVolume to attach its loop device, which this plugin does not have (--no-attach)")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return "", nil, status.Error(codes.InvalidArgument, "CreateVolume: volume capabilities are required")
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := d.checkCapability(c, kind); err != nil {
			return "", nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
		}
	}
	if err := csiutil.CheckMutableParameters(req.GetMutableParameters()); err != nil {
		return "", nil, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}
	return kind, params, nil
}

// matchesCreate checks that existing volume v (of ID id) is what a
// repeated CreateVolume asks for: CreateVolume is idempotent only for the
// same request. Errors are gRPC statuses.
func (v *volumeRecord) matchesCreate(req *csi.CreateVolumeRequest, id string, kind volumeKind, src *contentSource, params map[string]string) error {
	switch {
	case v.Name != req.GetName():
		return status.Errorf(codes.Internal, "CreateVolume: volume id %s of name %q collides with volume %q", id, req.GetName(), v.Name)
	case v.kind() != kind:
		return status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with kind %s, not %s", v.Name, v.kind(), kind)
	case !csiutil.Fits(v.CapacityBytes, req.GetCapacityRange()):
		return status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with capacity %d bytes, which does not fit the requested range", v.Name, v.CapacityBytes)
	case !sameSource(v.Source, src):
		return status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with another content source", v.Name)
	case !maps.Equal(v.Parameters, params):
		return status.Errorf(codes.AlreadyExists, "CreateVolume: volume %q exists with other parameters", v.Name)
	}
	return nil
}

// contentSourceCopy returns the path a new volume of kind is filled from
// ("" without a content source) and its capacity, grown to the source's
// size where the range r leaves room. Errors are gRPC statuses. The
// caller holds d.mu.
func (d *Driver) contentSourceCopy(src *contentSource, kind volumeKind, capacity int64, r *csi.CapacityRange) (string, int64, error) {
	if src == nil {
		return "", capacity, nil
	}
	var sourceKind volumeKind
	var sourceSize int64
	var copyFrom string
	if src.SnapshotID != "" {
		snap, ok := d.state.Snapshots[src.SnapshotID]
		if !ok {
			return "", 0, status.Errorf(codes.NotFound, "CreateVolume: source snapshot %s does not exist", src.SnapshotID)
		}
		sourceKind, sourceSize, copyFrom = snap.Kind, snap.SizeBytes, d.snapshotPath(snap.ID, snap.Kind)
	} else {
		vol, ok := d.state.Volumes[src.VolumeID]
		if !ok {
			return "", 0, status.Errorf(codes.NotFound, "CreateVolume: source volume %s does not exist", src.VolumeID)
		}
		sourceKind, sourceSize, copyFrom = vol.kind(), vol.CapacityBytes, d.volumePath(vol.ID, vol.kind())
	}
	if sourceKind != kind {
		return "", 0, status.Errorf(codes.InvalidArgument, "CreateVolume: the content source is of kind %s, the new volume of kind %s", sourceKind, kind)
	}
	if capacity < sourceSize {
		if r.GetRequiredBytes() != 0 || (r.GetLimitBytes() != 0 && r.GetLimitBytes() < sourceSize) {
			return "", 0, status.Errorf(codes.OutOfRange, "CreateVolume: the content source holds %d bytes, more than the requested capacity", sourceSize)
		}
		// Nothing was required: make room for the source.
		capacity = sourceSize
	}
	return copyFrom, capacity, nil
}

// createBacking makes a volume's directory or image, filled from copyFrom
// if that is set. Copies are made under a temporary name and renamed into
// place, so a volume that exists is complete; an existing volume is adopted
// (see CreateVolume).
func (d *Driver) createBacking(id string, kind volumeKind, capacity int64, copyFrom string) error {
	final := d.volumePath(id, kind)
	tmpPrefix := "." + id + ".tmp-"
	if err := removeStaleTemps(d.volumesDir(), tmpPrefix); err != nil {
		return err
	}
	if kind == kindBlock {
		if fi, err := os.Stat(final); err == nil {
			if fi.Size() < capacity {
				return os.Truncate(final, capacity)
			}
			return nil
		}
		tmp, err := os.CreateTemp(d.volumesDir(), tmpPrefix+"*")
		if err != nil {
			return fmt.Errorf("create image: %w", err)
		}
		tmp.Close()
		if copyFrom != "" {
			err = copyImage(copyFrom, tmp.Name(), capacity)
		} else {
			err = os.Truncate(tmp.Name(), capacity) // sparse: no space is used yet
		}
		if err == nil {
			err = os.Rename(tmp.Name(), final)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("create image: %w", err)
		}
		return nil
	}

	if _, err := os.Stat(final); err == nil {
		return nil
	}
	if copyFrom == "" {
		if err := os.Mkdir(final, 0o777); err != nil {
			return fmt.Errorf("create volume directory: %w", err)
		}
		// Mkdir is subject to the umask; pods of any user must be able
		// to write, as on a freshly formatted file system root.
		if err := os.Chmod(final, 0o777); err != nil {
			return fmt.Errorf("set volume directory mode: %w", err)
		}
		return nil
	}
	tmp, err := os.MkdirTemp(d.volumesDir(), tmpPrefix)
	if err != nil {
		return fmt.Errorf("create volume directory: %w", err)
	}
	if err := copyTree(copyFrom, tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("create volume directory: %w", err)
	}
	return nil
}

func (s *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "DeleteVolume: %v", err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	v, recorded := d.state.Volumes[id]
	if recorded && len(v.PublishedNodes) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume: volume %s is still published to node(s) %s", id, strings.Join(v.publishedNodeIDs(), ", "))
	}
	// A loop device can outlive its publication record (a crash between
	// attach and save); it must go before its image does.
	if err := d.detachIfUnused("DeleteVolume", id); err != nil {
		return nil, err
	}
	// A directory volume still staged or published on a node is in use,
	// whether or not it was ever controller-published (a CSIDriver with
	// attachRequired: false has no VolumeAttachment to hold its deletion
	// back): the CSI spec's answer is FAILED_PRECONDITION, and the
	// provisioner tries again.
	if at, err := d.dirMountedAt(id); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume: %v", err)
	} else if at != "" {
		return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume: volume %s is still mounted at %s (NodeUnpublishVolume and NodeUnstageVolume must come first)", id, at)
	}
	// Backing first, record second, so that a crash in between leaves a
	// record whose retried delete finishes the job. Both kinds are removed:
	// without a record the kind is not known.
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume: remove volume directory: %v", err)
	}
	if err := os.Remove(d.volumeImage(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "DeleteVolume: remove volume image: %v", err)
	}
	if recorded {
		delete(d.state.Volumes, id)
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteVolume: %v", err)
		}
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// detachIfUnused detaches the loop device of a block volume, if it has one.
// A device that something still uses (a mounted file system, a pod's
// device) is refused with FailedPrecondition: detaching it under a mount
// would turn the pod's writes into I/O errors. The caller holds mu.
func (d *Driver) detachIfUnused(method, id string) error {
	dev, err := findLoop(d.volumeImage(id))
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if dev == "" {
		return nil
	}
	busy, err := loopInUse(dev)
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	if busy {
		return status.Errorf(codes.FailedPrecondition, "%s: volume %s is still in use on loop device %s (NodeUnpublishVolume and NodeUnstageVolume must come first)", method, id, dev)
	}
	if err := detachLoop(dev); err != nil {
		return status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return nil
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
	v, ok := d.state.Volumes[id]
	var kind volumeKind
	if ok {
		kind = v.kind()
	}
	d.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ValidateVolumeCapabilities: volume %s does not exist", id)
	}
	if len(req.GetParameters()) > 0 {
		want, _, err := parseParameters(req.GetParameters(), d.cfg.StrictParameters)
		if err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
		if want != kind {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: fmt.Sprintf("volume is of kind %s, not %s", kind, want)}, nil
		}
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := d.checkCapability(c, kind); err != nil {
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

	ids := d.volumeIDsAfter(after)
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

// volumeIDsAfter are the IDs of the volumes the controller knows that sort
// after a page token (all of them for ""), in order: the pages of
// ListVolumes and ControllerListVolumeHealth. The caller holds d.mu.
func (d *Driver) volumeIDsAfter(after string) []string {
	ids := make([]string, 0, len(d.state.Volumes))
	for id := range d.state.Volumes {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// GetCapacity reports what is left in the storage pool of the requested
// topology segment, or in all pools together; see Config.CapacityPerZone.
func (s *controllerServer) GetCapacity(_ context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	kind, _, err := parseParameters(req.GetParameters(), s.d.cfg.StrictParameters)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "GetCapacity: %v", err)
	}
	for _, c := range req.GetVolumeCapabilities() {
		if s.d.checkCapability(c, kind) != nil {
			// No volume with that capability can be provisioned.
			return &csi.GetCapacityResponse{AvailableCapacity: 0, MaximumVolumeSize: wrapperspb.Int64(0)}, nil
		}
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	var seg map[string]string
	if t := req.GetAccessibleTopology(); t != nil {
		seg = t.GetSegments()
	}
	available, maxVolume, err := d.capacityIn(seg)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "GetCapacity: %v", err)
	}
	return &csi.GetCapacityResponse{AvailableCapacity: available, MaximumVolumeSize: wrapperspb.Int64(maxVolume)}, nil
}

// ControllerExpandVolume grows a volume. A block volume's image grows at
// once, in use or not (online expansion); the node then has to make the
// loop device and the file system follow, so node expansion is required. A
// directory volume's capacity is only a number.
func (s *controllerServer) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkVolumeID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume: %v", err)
	}
	r := req.GetCapacityRange()
	if r == nil {
		return nil, status.Error(codes.InvalidArgument, "ControllerExpandVolume: capacity range is required")
	}
	if err := checkRange(r); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume: %v", err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	v, ok := d.state.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerExpandVolume: volume %s does not exist", id)
	}
	kind := v.kind()
	if c := req.GetVolumeCapability(); c != nil {
		if err := s.d.checkCapability(c, kind); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume: %v", err)
		}
	}
	resp := &csi.ControllerExpandVolumeResponse{CapacityBytes: v.CapacityBytes, NodeExpansionRequired: kind == kindBlock}
	if limit := r.GetLimitBytes(); limit > 0 && v.CapacityBytes > limit {
		return nil, status.Errorf(codes.OutOfRange, "ControllerExpandVolume: volume %s has %d bytes, more than the limit of %d; volumes do not shrink", id, v.CapacityBytes, limit)
	}
	want := r.GetRequiredBytes()
	if kind == kindBlock {
		want = roundUp(want, sectorSize)
		if limit := r.GetLimitBytes(); limit > 0 && want > limit {
			want = r.GetRequiredBytes() // the limit allows no rounding
		}
	}
	if want <= v.CapacityBytes {
		return resp, nil // large enough already, or a retry
	}
	if !d.poolFits(v.Zone, want-v.CapacityBytes) {
		free, _ := d.poolFree(v.Zone)
		return nil, status.Errorf(codes.ResourceExhausted, "ControllerExpandVolume: the pool of zone %q has %d bytes left, %d more are needed", v.Zone, free, want-v.CapacityBytes)
	}
	if kind == kindBlock {
		if err := growFile(d.volumeImage(id), want); err != nil {
			return nil, status.Errorf(codes.Internal, "ControllerExpandVolume: %v", err)
		}
	}
	before := v.CapacityBytes
	v.CapacityBytes = want
	if err := d.store.save(d.state); err != nil {
		// The image may stay larger: a retry adopts it.
		v.CapacityBytes = before
		return nil, status.Errorf(codes.Internal, "ControllerExpandVolume: %v", err)
	}
	resp.CapacityBytes = want
	return resp, nil
}

// growFile extends a file to size; it never shrinks one.
func growFile(path string, size int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("grow %s: %w", path, err)
	}
	if fi.Size() >= size {
		return nil
	}
	if err := os.Truncate(path, size); err != nil {
		return fmt.Errorf("grow %s: %w", path, err)
	}
	return nil
}

// csiVolume is the CSI view of a record. The volume context names the
// backing kind, beside the parameters the driver does not know itself (see
// parseParameters); nothing in it is secret.
func (v *volumeRecord) csiVolume() *csi.Volume {
	vol := &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		VolumeContext:      map[string]string{},
		AccessibleTopology: zoneTopology(v.Zone),
	}
	maps.Copy(vol.VolumeContext, v.Parameters)
	vol.VolumeContext[VolumeContextKind] = string(v.kind())
	switch {
	case v.Source == nil:
	case v.Source.SnapshotID != "":
		vol.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.Source.SnapshotID},
		}}
	default:
		vol.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.Source.VolumeID},
		}}
	}
	return vol
}

// isVolumeIDWeMake reports whether s has the shape of volumeIDFor's output.
func isVolumeIDWeMake(s string) bool { return isIDWeMake(volumeIDPrefix, s) }

// parseContentSource checks a CreateVolume content source; nil means none.
// Malformed IDs are refused here, so that no path is ever built from them.
func parseContentSource(cs *csi.VolumeContentSource) (*contentSource, error) {
	switch {
	case cs == nil:
		return nil, nil
	case cs.GetSnapshot() != nil:
		id := cs.GetSnapshot().GetSnapshotId()
		if err := checkSnapshotID(id); err != nil {
			return nil, fmt.Errorf("content source: %w", err)
		}
		return &contentSource{SnapshotID: id}, nil
	case cs.GetVolume() != nil:
		id := cs.GetVolume().GetVolumeId()
		if err := checkVolumeID(id); err != nil {
			return nil, fmt.Errorf("content source: %w", err)
		}
		return &contentSource{VolumeID: id}, nil
	}
	return nil, errors.New("content source must name a snapshot or a volume")
}

func sameSource(a, b *contentSource) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// checkRange refuses capacity ranges that are malformed in themselves.
func checkRange(r *csi.CapacityRange) error {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || limit < 0 {
		return fmt.Errorf("capacity range must not be negative (required %d, limit %d)", req, limit)
	}
	if limit > 0 && req > limit {
		return fmt.Errorf("required bytes %d exceed limit bytes %d", req, limit)
	}
	return nil
}

// capacityFor picks the capacity of a new volume: the required size, or the
// default when none is required, capped by the limit. A block volume is
// made at least minBlockCapacityBytes and a whole number of sectors, within
// the limit. Errors are gRPC statuses.
func capacityFor(r *csi.CapacityRange, kind volumeKind) (int64, error) {
	if err := checkRange(r); err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "CreateVolume: %v", err)
	}
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	var capacity int64
	switch {
	case req > 0:
		capacity = req
	case limit > 0 && limit < defaultCapacityBytes:
		capacity = limit
	default:
		capacity = defaultCapacityBytes
	}
	if kind != kindBlock {
		return capacity, nil
	}
	capacity = roundUp(max(capacity, minBlockCapacityBytes), sectorSize)
	if limit > 0 && capacity > limit {
		return 0, status.Errorf(codes.OutOfRange, "CreateVolume: a block volume needs at least %d bytes in whole %d-byte sectors, which the limit of %d bytes does not allow", minBlockCapacityBytes, sectorSize, limit)
	}
	return capacity, nil
}

func roundUp(n, unit int64) int64 { return (n + unit - 1) / unit * unit }
