package hostpath

// The CSI GroupController service: volume group snapshots, as the CSI
// spec's GroupController describes them (CreateVolumeGroupSnapshot,
// DeleteVolumeGroupSnapshot, GetVolumeGroupSnapshot), modelled after what
// kubernetes-csi/csi-driver-host-path's groupcontrollerserver.go does: each
// member is an ordinary snapshot (restorable by CreateVolume like any
// other), tagged with its group's ID.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// groupSnapshotIDPrefix starts every group snapshot ID this driver hands
// out, so that it is never mistaken for a volume or snapshot ID.
const groupSnapshotIDPrefix = "group-"

// groupSnapshotRecord is one group snapshot as the controller knows it.
type groupSnapshotRecord struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// SourceVolumeIDs and SnapshotIDs are in the order of the request
	// that made the group: SnapshotIDs[i] is the snapshot of
	// SourceVolumeIDs[i].
	SourceVolumeIDs []string  `json:"sourceVolumeIDs"`
	SnapshotIDs     []string  `json:"snapshotIDs"`
	CreatedAt       time.Time `json:"createdAt"`
}

// groupControllerServer serves the CSI GroupController service, wherever
// the Controller service is served.
type groupControllerServer struct {
	csi.UnimplementedGroupControllerServer
	d *Driver
}

func (s *groupControllerServer) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	return &csi.GroupControllerGetCapabilitiesResponse{Capabilities: []*csi.GroupControllerServiceCapability{{
		Type: &csi.GroupControllerServiceCapability_Rpc{Rpc: &csi.GroupControllerServiceCapability_RPC{
			Type: csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT,
		}},
	}}}, nil
}

// memberSnapshotIDFor is the ID of the snapshot of volume volumeID in the
// group of the given name. The name a CreateSnapshot may use cannot hold
// '/' (checkName), so no plain snapshot can have this ID.
func memberSnapshotIDFor(groupName, volumeID string) string {
	return snapshotIDFor(groupName + "/" + volumeID)
}

// CreateVolumeGroupSnapshot cuts one snapshot of each source volume, all
// at one point in time: the copies are made in one critical section of the
// driver's lock, so no CSI call of this controller (a write through
// CreateVolume from a source, an expansion, a delete) falls between two
// members, and every member carries the group's one creation time. What a
// pod writes into a mounted volume while the copies run is not held back
// (the driver cannot freeze a file system it does not mount), which is the
// crash consistency a storage array without quiescing gives too.
func (s *groupControllerServer) CreateVolumeGroupSnapshot(_ context.Context, req *csi.CreateVolumeGroupSnapshotRequest) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	if err := checkName(req.GetName()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolumeGroupSnapshot: %v", err)
	}
	sources := req.GetSourceVolumeIds()
	if len(sources) == 0 {
		return nil, status.Error(codes.InvalidArgument, "CreateVolumeGroupSnapshot: source_volume_ids is empty")
	}
	for i, id := range sources {
		if err := checkVolumeID(id); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "CreateVolumeGroupSnapshot: source: %v", err)
		}
		if slices.Contains(sources[:i], id) {
			return nil, status.Errorf(codes.InvalidArgument, "CreateVolumeGroupSnapshot: source volume %s is listed twice", id)
		}
	}
	if params := req.GetParameters(); len(params) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolumeGroupSnapshot: unknown parameters %v (group snapshots take none)", slices.Sorted(maps.Keys(params)))
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	id := idFor(groupSnapshotIDPrefix, req.GetName())
	if g, ok := d.state.GroupSnapshots[id]; ok {
		if g.Name != req.GetName() {
			return nil, status.Errorf(codes.Internal, "CreateVolumeGroupSnapshot: group snapshot id %s of name %q collides with group snapshot %q", id, req.GetName(), g.Name)
		}
		if !sameSet(g.SourceVolumeIDs, sources) {
			return nil, status.Errorf(codes.AlreadyExists, "CreateVolumeGroupSnapshot: group snapshot %q exists with source volumes %v, not %v", g.Name, g.SourceVolumeIDs, sources)
		}
		return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: d.csiGroupSnapshot(g)}, nil
	}
	for _, v := range sources {
		if _, ok := d.state.Volumes[v]; !ok {
			return nil, status.Errorf(codes.NotFound, "CreateVolumeGroupSnapshot: source volume %s does not exist", v)
		}
	}
	g, err := d.cutGroup(id, req.GetName(), sources)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolumeGroupSnapshot: %v", err)
	}
	return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: d.csiGroupSnapshot(g)}, nil
}

// cutGroup copies every source volume and records the group; d.mu is held.
// On a failure the copies made so far are removed, so that no snapshot
// leaks from a group the caller never heard of (the spec asks the plugin to
// clean up when it has no group ID to give back).
func (d *Driver) cutGroup(id, name string, sources []string) (*groupSnapshotRecord, error) {
	g := &groupSnapshotRecord{ID: id, Name: name, SourceVolumeIDs: slices.Clone(sources), CreatedAt: time.Now().UTC()}
	undo := func() {
		for _, sid := range g.SnapshotIDs {
			d.removeSnapshotFiles(sid)
			delete(d.state.Snapshots, sid)
		}
	}
	for _, src := range sources {
		v := d.state.Volumes[src]
		sid := memberSnapshotIDFor(name, src)
		if err := d.copySnapshot(sid, v); err != nil {
			undo()
			return nil, err
		}
		g.SnapshotIDs = append(g.SnapshotIDs, sid)
		d.state.Snapshots[sid] = &snapshotRecord{
			ID: sid, Name: name + "/" + src, SourceVolumeID: src, Kind: v.kind(),
			SizeBytes: v.CapacityBytes, CreatedAt: g.CreatedAt, GroupSnapshotID: id,
		}
	}
	d.state.GroupSnapshots[id] = g
	if err := d.store.save(d.state); err != nil {
		delete(d.state.GroupSnapshots, id)
		undo()
		return nil, err
	}
	return g, nil
}

// removeSnapshotFiles removes a snapshot's copy, whatever its kind, and
// any temporary copy of it; best effort, for clean-up after a failure.
func (d *Driver) removeSnapshotFiles(id string) error {
	for _, kind := range []volumeKind{kindDirectory, kindBlock} {
		if err := os.RemoveAll(d.snapshotPath(id, kind)); err != nil {
			return err
		}
	}
	return removeStaleTemps(d.snapshotsDir(), "."+id+".tmp-")
}

// DeleteVolumeGroupSnapshot deletes the group and all its snapshots. A
// group that does not exist (any more) is deleted already: OK, as the
// spec asks.
func (s *groupControllerServer) DeleteVolumeGroupSnapshot(_ context.Context, req *csi.DeleteVolumeGroupSnapshotRequest) (*csi.DeleteVolumeGroupSnapshotResponse, error) {
	id := req.GetGroupSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "DeleteVolumeGroupSnapshot: group_snapshot_id is empty")
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.state.GroupSnapshots[id]
	if !ok {
		return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
	}
	if err := checkGroupMembers(g, req.GetSnapshotIds()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "DeleteVolumeGroupSnapshot: %v", err)
	}
	// Files first, records second, as in DeleteSnapshot: a crash in
	// between leaves records whose files are gone, which a retry removes.
	for _, sid := range g.SnapshotIDs {
		if err := d.removeSnapshotFiles(sid); err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteVolumeGroupSnapshot: %v", err)
		}
	}
	for _, sid := range g.SnapshotIDs {
		delete(d.state.Snapshots, sid)
	}
	delete(d.state.GroupSnapshots, id)
	if err := d.store.save(d.state); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolumeGroupSnapshot: %v", err)
	}
	return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
}

// GetVolumeGroupSnapshot reports a group and its members; NOT_FOUND for a
// group that does not exist.
func (s *groupControllerServer) GetVolumeGroupSnapshot(_ context.Context, req *csi.GetVolumeGroupSnapshotRequest) (*csi.GetVolumeGroupSnapshotResponse, error) {
	id := req.GetGroupSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "GetVolumeGroupSnapshot: group_snapshot_id is empty")
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.state.GroupSnapshots[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "GetVolumeGroupSnapshot: group snapshot %s does not exist", id)
	}
	if err := checkGroupMembers(g, req.GetSnapshotIds()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "GetVolumeGroupSnapshot: %v", err)
	}
	return &csi.GetVolumeGroupSnapshotResponse{GroupSnapshot: d.csiGroupSnapshot(g)}, nil
}

// checkGroupMembers compares the snapshot IDs a caller passed with the
// group's: the spec asks a plugin that can detect a mismatch to report it.
// An empty list is not a mismatch: this plugin does not need it.
func checkGroupMembers(g *groupSnapshotRecord, ids []string) error {
	if len(ids) == 0 || sameSet(g.SnapshotIDs, ids) {
		return nil
	}
	return fmt.Errorf("snapshot_ids %v do not match the snapshots %v of group snapshot %s", ids, g.SnapshotIDs, g.ID)
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	as, bs := slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(as, bs)
}

// csiGroupSnapshot is the group as the CSI spec describes it; d.mu is held.
func (d *Driver) csiGroupSnapshot(g *groupSnapshotRecord) *csi.VolumeGroupSnapshot {
	out := &csi.VolumeGroupSnapshot{
		GroupSnapshotId: g.ID,
		CreationTime:    timestamppb.New(g.CreatedAt),
		// Copies are complete before CreateVolumeGroupSnapshot returns.
		ReadyToUse: true,
	}
	for _, sid := range g.SnapshotIDs {
		if snap, ok := d.state.Snapshots[sid]; ok {
			out.Snapshots = append(out.Snapshots, snap.csiSnapshot())
		}
	}
	return out
}
