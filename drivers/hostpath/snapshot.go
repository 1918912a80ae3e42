package hostpath

// The Controller service's snapshots: created, listed and deleted.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// CreateSnapshot copies a volume into ROOT/snapshots: a directory tree, or
// the image file with its holes. The copy is crash-consistent at best (a
// mounted file system may have data in memory that the image lacks), which
// is what a storage snapshot without file system freeze gives too.
func (s *controllerServer) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if err := checkName(req.GetName()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateSnapshot: %v", err)
	}
	source := req.GetSourceVolumeId()
	if err := checkVolumeID(source); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateSnapshot: source: %v", err)
	}
	if params := req.GetParameters(); len(params) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "CreateSnapshot: unknown parameters %v (snapshots take none)", slices.Sorted(maps.Keys(params)))
	}

	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	id := snapshotIDFor(req.GetName())
	if snap, ok := d.state.Snapshots[id]; ok {
		switch {
		case snap.Name != req.GetName():
			return nil, status.Errorf(codes.Internal, "CreateSnapshot: snapshot id %s of name %q collides with snapshot %q", id, req.GetName(), snap.Name)
		case snap.SourceVolumeID != source:
			return nil, status.Errorf(codes.AlreadyExists, "CreateSnapshot: snapshot %q exists with source volume %s, not %s", snap.Name, snap.SourceVolumeID, source)
		}
		return &csi.CreateSnapshotResponse{Snapshot: snap.csiSnapshot()}, nil
	}
	v, ok := d.state.Volumes[source]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "CreateSnapshot: source volume %s does not exist", source)
	}
	if err := d.copySnapshot(id, v); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateSnapshot: %v", err)
	}
	snap := &snapshotRecord{
		ID: id, Name: req.GetName(), SourceVolumeID: source, Kind: v.kind(),
		SizeBytes: v.CapacityBytes, CreatedAt: time.Now().UTC(),
	}
	d.state.Snapshots[id] = snap
	if err := d.store.save(d.state); err != nil {
		delete(d.state.Snapshots, id)
		return nil, status.Errorf(codes.Internal, "CreateSnapshot: %v", err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: snap.csiSnapshot()}, nil
}

// copySnapshot copies volume v to snapshot id under a temporary name and
// renames it into place; an existing snapshot copy is adopted, as in
// createBacking.
func (d *Driver) copySnapshot(id string, v *volumeRecord) error {
	kind := v.kind()
	final := d.snapshotPath(id, kind)
	tmpPrefix := "." + id + ".tmp-"
	if err := removeStaleTemps(d.snapshotsDir(), tmpPrefix); err != nil {
		return err
	}
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	var tmp string
	var err error
	if kind == kindBlock {
		var f *os.File
		if f, err = os.CreateTemp(d.snapshotsDir(), tmpPrefix+"*"); err == nil {
			tmp = f.Name()
			f.Close()
			err = copyImage(d.volumeImage(v.ID), tmp, 0)
		}
	} else if tmp, err = os.MkdirTemp(d.snapshotsDir(), tmpPrefix); err == nil {
		err = copyTree(d.volumeDir(v.ID), tmp)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return fmt.Errorf("snapshot volume %s: %w", v.ID, err)
	}
	return nil
}

func (s *controllerServer) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := checkSnapshotID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "DeleteSnapshot: %v", err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	// The spec: a snapshot with a group_snapshot_id cannot be deleted
	// stand alone (INVALID_ARGUMENT); its group is deleted whole.
	if snap, ok := d.state.Snapshots[id]; ok && snap.GroupSnapshotID != "" {
		return nil, status.Errorf(codes.InvalidArgument, "DeleteSnapshot: snapshot %s is part of group snapshot %s and can only be deleted with it (DeleteVolumeGroupSnapshot)", id, snap.GroupSnapshotID)
	}
	// Files first, record second, as in DeleteVolume. Volumes restored
	// from the snapshot are copies and do not mind.
	for _, kind := range []volumeKind{kindDirectory, kindBlock} {
		if err := os.RemoveAll(d.snapshotPath(id, kind)); err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteSnapshot: %v", err)
		}
	}
	if err := removeStaleTemps(d.snapshotsDir(), "."+id+".tmp-"); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteSnapshot: %v", err)
	}
	if _, ok := d.state.Snapshots[id]; ok {
		delete(d.state.Snapshots, id)
		if err := d.store.save(d.state); err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteSnapshot: %v", err)
		}
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots pages through the snapshots in ID order, like ListVolumes.
// Filters that match nothing, including IDs that this plugin could never
// have made, give an empty list, as the spec asks.
func (s *controllerServer) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "ListSnapshots: max_entries must not be negative, got %d", req.GetMaxEntries())
	}
	after := req.GetStartingToken()
	if after != "" && !isIDWeMake(snapshotIDPrefix, after) {
		return nil, status.Errorf(codes.Aborted, "ListSnapshots: starting token %q is not one this plugin returned", after)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()

	var ids []string
	for id, snap := range d.state.Snapshots {
		if id <= after ||
			(req.GetSnapshotId() != "" && id != req.GetSnapshotId()) ||
			(req.GetSourceVolumeId() != "" && snap.SourceVolumeID != req.GetSourceVolumeId()) {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	resp := &csi.ListSnapshotsResponse{}
	if max := int(req.GetMaxEntries()); max > 0 && len(ids) > max {
		ids = ids[:max]
		resp.NextToken = ids[max-1]
	}
	for _, id := range ids {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: d.state.Snapshots[id].csiSnapshot()})
	}
	return resp, nil
}

func (s *controllerServer) GetSnapshot(_ context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := checkSnapshotID(id); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "GetSnapshot: %v", err)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	snap, ok := d.state.Snapshots[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "GetSnapshot: snapshot %s does not exist", id)
	}
	return &csi.GetSnapshotResponse{Snapshot: snap.csiSnapshot()}, nil
}

func (s *snapshotRecord) csiSnapshot() *csi.Snapshot {
	return &csi.Snapshot{
		SizeBytes:      s.SizeBytes,
		SnapshotId:     s.ID,
		SourceVolumeId: s.SourceVolumeID,
		CreationTime:   timestamppb.New(s.CreatedAt),
		// The spec asks a member's group_snapshot_id to be its group's.
		GroupSnapshotId: s.GroupSnapshotID,
		// Copies are complete before CreateSnapshot returns.
		ReadyToUse: true,
	}
}
