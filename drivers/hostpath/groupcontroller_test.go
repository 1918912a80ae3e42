package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestGroupSnapshotLifecycle: a group of two volumes is cut at one time,
// is idempotent by name, restores member by member with the data of the
// moment it was cut, refuses its members' stand-alone deletion and goes
// with its members.
func TestGroupSnapshotLifecycle(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	var vols []string
	for _, name := range []string{"pvc-a", "pvc-b"} {
		v, err := r.ctrl.CreateVolume(ctx, createReq(name, 10*mib, 0))
		if err != nil {
			t.Fatal(err)
		}
		id := v.GetVolume().GetVolumeId()
		vols = append(vols, id)
		if err := os.WriteFile(filepath.Join(env.root, "volumes", id, "data"), []byte("before "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: "group-1", SourceVolumeIds: vols}
	first, err := r.group.CreateVolumeGroupSnapshot(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	g := first.GetGroupSnapshot()
	if !g.GetReadyToUse() || g.GetGroupSnapshotId() == "" || len(g.GetSnapshots()) != 2 {
		t.Fatalf("group = %v", g)
	}
	for i, s := range g.GetSnapshots() {
		if s.GetSourceVolumeId() != vols[i] || s.GetGroupSnapshotId() != g.GetGroupSnapshotId() ||
			!s.GetCreationTime().AsTime().Equal(g.GetCreationTime().AsTime()) || s.GetSizeBytes() != 10*mib {
			t.Fatalf("member %d = %v, group %v", i, s, g)
		}
	}
	// The same name and sources, in another order: the same group.
	again, err := r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "group-1", SourceVolumeIds: []string{vols[1], vols[0]}})
	if err != nil || again.GetGroupSnapshot().GetGroupSnapshotId() != g.GetGroupSnapshotId() {
		t.Fatalf("retry = %v, %v", again, err)
	}
	// The same name, other sources.
	_, err = r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "group-1", SourceVolumeIds: vols[:1]})
	wantCode(t, err, codes.AlreadyExists)

	if err := os.WriteFile(filepath.Join(env.root, "volumes", vols[0], "data"), []byte("after"), 0o644); err != nil {
		t.Fatal(err)
	}
	member := g.GetSnapshots()[0].GetSnapshotId()
	restoreReq := createReq("pvc-restored", 0, 0)
	restoreReq.VolumeContentSource = snapshotSource(member)
	restored, err := r.ctrl.CreateVolume(ctx, restoreReq)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(env.root, "volumes", restored.GetVolume().GetVolumeId(), "data"))
	if err != nil || string(data) != "before pvc-a" {
		t.Fatalf("restored member holds %q, %v; want the data of the moment of the group", data, err)
	}
	got, err := r.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member})
	if err != nil || got.GetSnapshot().GetGroupSnapshotId() != g.GetGroupSnapshotId() {
		t.Fatalf("GetSnapshot of a member = %v, %v", got, err)
	}
	_, err = r.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: member})
	wantCode(t, err, codes.InvalidArgument)

	ids := []string{g.GetSnapshots()[0].GetSnapshotId(), g.GetSnapshots()[1].GetSnapshotId()}
	if _, err := r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids}); err != nil {
		t.Fatal(err)
	}
	_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids[:1]})
	wantCode(t, err, codes.InvalidArgument)
	_, err = r.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids[:1]})
	wantCode(t, err, codes.InvalidArgument)
	for range 2 { // idempotent
		if _, err := r.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()})
	wantCode(t, err, codes.NotFound)
	_, err = r.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member})
	wantCode(t, err, codes.NotFound)
	if _, err := os.Stat(filepath.Join(env.root, "snapshots", member)); !os.IsNotExist(err) {
		t.Fatalf("member's copy after the group's deletion: %v", err)
	}
	// The restored volume is a copy and outlives the group.
	if _, err := os.Stat(filepath.Join(env.root, "volumes", restored.GetVolume().GetVolumeId(), "data")); err != nil {
		t.Fatal(err)
	}
}

// TestGroupSnapshotErrors: what the spec and csi-sanity ask of bad input.
func TestGroupSnapshotErrors(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	v, err := r.ctrl.CreateVolume(ctx, createReq("pvc-a", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	vol := v.GetVolume().GetVolumeId()
	for _, tc := range []struct {
		name string
		req  *csi.CreateVolumeGroupSnapshotRequest
		want codes.Code
	}{
		{"no name", &csi.CreateVolumeGroupSnapshotRequest{SourceVolumeIds: []string{vol}}, codes.InvalidArgument},
		{"no sources", &csi.CreateVolumeGroupSnapshotRequest{Name: "g"}, codes.InvalidArgument},
		{"a source twice", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{vol, vol}}, codes.InvalidArgument},
		{"parameters", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{vol}, Parameters: map[string]string{"x": "y"}}, codes.InvalidArgument},
		{"missing source", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{vol, "vol-00000000000000000000"}}, codes.NotFound},
	} {
		_, err := r.group.CreateVolumeGroupSnapshot(ctx, tc.req)
		if got := status.Code(err); got != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	// A failed group leaves no member behind.
	list, err := r.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil || len(list.GetEntries()) != 0 {
		t.Fatalf("snapshots after failed groups: %v, %v", list, err)
	}
	_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: "not/one/of/ours"})
	wantCode(t, err, codes.NotFound)
	_, err = r.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{})
	wantCode(t, err, codes.InvalidArgument)
	if _, err := r.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: "not/one/of/ours"}); err != nil {
		t.Fatalf("delete of an unknown group: %v", err)
	}
	caps, err := r.group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 1 ||
		caps.GetCapabilities()[0].GetRpc().GetType() != csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT {
		t.Fatalf("GroupControllerGetCapabilities = %v, %v", caps, err)
	}
	node := env.start(t, Config{Mode: ModeNode})
	_, err = node.group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	wantCode(t, err, codes.Unimplemented)
}
