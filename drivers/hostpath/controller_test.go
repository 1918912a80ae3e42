package hostpath

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const mib = 1 << 20

func createReq(name string, required, limit int64) *csi.CreateVolumeRequest {
	req := &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{rwo}}
	if required != 0 || limit != 0 {
		req.CapacityRange = &csi.CapacityRange{RequiredBytes: required, LimitBytes: limit}
	}
	return req
}

func TestCreateVolume(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	blockCap := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	tests := []struct {
		name         string
		req          *csi.CreateVolumeRequest
		wantCode     codes.Code
		wantCapacity int64
	}{
		{"default capacity", createReq("pvc-default", 0, 0), codes.OK, 1 << 30},
		{"required capacity", createReq("pvc-5m", 5*mib, 0), codes.OK, 5 * mib},
		{"limit below default", createReq("pvc-limit", 0, 3*mib), codes.OK, 3 * mib},
		{"no name", createReq("", 0, 0), codes.InvalidArgument, 0},
		{"name with slash", createReq("a/b", 0, 0), codes.InvalidArgument, 0},
		{"name with dotdot", createReq("..", 0, 0), codes.InvalidArgument, 0},
		{"name with NUL", createReq("a\x00b", 0, 0), codes.InvalidArgument, 0},
		{"no capabilities", &csi.CreateVolumeRequest{Name: "pvc-nocap"}, codes.InvalidArgument, 0},
		{"block access", &csi.CreateVolumeRequest{Name: "pvc-block", VolumeCapabilities: []*csi.VolumeCapability{blockCap}}, codes.InvalidArgument, 0},
		{"unknown access mode", &csi.CreateVolumeRequest{Name: "pvc-unknown", VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_UNKNOWN)}}, codes.InvalidArgument, 0},
		{"required above limit", createReq("pvc-inverted", 2*mib, mib), codes.InvalidArgument, 0},
		{"negative", createReq("pvc-negative", -1, 0), codes.InvalidArgument, 0},
		{"unknown source volume", &csi.CreateVolumeRequest{
			Name: "pvc-clone", VolumeCapabilities: []*csi.VolumeCapability{rwo},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "vol-x"}}},
		}, codes.NotFound, 0},
		{"unknown source snapshot", &csi.CreateVolumeRequest{
			Name: "pvc-restore", VolumeCapabilities: []*csi.VolumeCapability{rwo},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "snap-x"}}},
		}, codes.NotFound, 0},
		{"empty content source", &csi.CreateVolumeRequest{
			Name: "pvc-empty-source", VolumeCapabilities: []*csi.VolumeCapability{rwo},
			VolumeContentSource: &csi.VolumeContentSource{},
		}, codes.InvalidArgument, 0},
		{"unknown parameter is passed on", &csi.CreateVolumeRequest{
			Name: "pvc-param", VolumeCapabilities: []*csi.VolumeCapability{rwo}, Parameters: map[string]string{"knid": "block"},
		}, codes.OK, 1 << 30},
		{"multi-node access mode without --multi-node", &csi.CreateVolumeRequest{
			Name: "pvc-rwx", VolumeCapabilities: []*csi.VolumeCapability{rwo, mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)},
		}, codes.InvalidArgument, 0},
		{"unknown kind", &csi.CreateVolumeRequest{
			Name: "pvc-kind", VolumeCapabilities: []*csi.VolumeCapability{rwo}, Parameters: map[string]string{"kind": "lvm"},
		}, codes.InvalidArgument, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := r.ctrl.CreateVolume(context.Background(), tc.req)
			wantCode(t, err, tc.wantCode)
			if err != nil {
				return
			}
			v := resp.GetVolume()
			if v.GetVolumeId() != volumeIDFor(tc.req.GetName()) {
				t.Errorf("volume id = %q, want %q", v.GetVolumeId(), volumeIDFor(tc.req.GetName()))
			}
			if v.GetCapacityBytes() != tc.wantCapacity {
				t.Errorf("capacity = %d, want %d", v.GetCapacityBytes(), tc.wantCapacity)
			}
			if fi, err := os.Stat(filepath.Join(env.root, "volumes", v.GetVolumeId())); err != nil || !fi.IsDir() {
				t.Errorf("volume directory missing: %v", err)
			}
		})
	}
}

func TestCreateVolumeIdempotent(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()

	first, err := r.ctrl.CreateVolume(ctx, createReq("pvc-a", 10*mib, 10*mib))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		req      *csi.CreateVolumeRequest
		wantCode codes.Code
	}{
		{"same request", createReq("pvc-a", 10*mib, 10*mib), codes.OK},
		{"smaller requirement still fits", createReq("pvc-a", mib, 0), codes.OK},
		{"no capacity range", createReq("pvc-a", 0, 0), codes.OK},
		{"larger requirement", createReq("pvc-a", 20*mib, 20*mib), codes.AlreadyExists},
		{"limit below capacity", createReq("pvc-a", 0, 5*mib), codes.AlreadyExists},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := r.ctrl.CreateVolume(ctx, tc.req)
			wantCode(t, err, tc.wantCode)
			if err == nil && resp.GetVolume().GetVolumeId() != first.GetVolume().GetVolumeId() {
				t.Fatalf("retry gave volume %q, first call gave %q", resp.GetVolume().GetVolumeId(), first.GetVolume().GetVolumeId())
			}
		})
	}
}

// The deliberate bug of --bug-non-idempotent-create: every repeated
// CreateVolume makes a volume of its own, with an ID of the driver's
// shape (ListVolumes pages by it) that is the same in every run.
func TestCreateVolumeBugNonIdempotent(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController, BugNonIdempotentCreate: true})
	ctx := context.Background()

	ids := map[string]bool{}
	for range 3 {
		resp, err := r.ctrl.CreateVolume(ctx, createReq("pvc-a", 10*mib, 10*mib))
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetVolume().GetVolumeId()
		if ids[id] || !isVolumeIDWeMake(id) {
			t.Fatalf("CreateVolume gave %q (IDs so far %v): want a new ID of the driver's shape", id, ids)
		}
		ids[id] = true
	}
	for _, want := range []string{volumeIDFor("pvc-a"), volumeIDFor("pvc-a#2"), volumeIDFor("pvc-a#3")} {
		if !ids[want] {
			t.Errorf("no volume %s among %v", want, ids)
		}
	}
	list, err := r.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetEntries()) != 3 {
		t.Errorf("ListVolumes has %d volumes, want the 3 made", len(list.GetEntries()))
	}
}

func TestDeleteVolumeIdempotent(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()

	resp, err := r.ctrl.CreateVolume(ctx, createReq("pvc-del", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetVolume().GetVolumeId()
	dir := filepath.Join(env.root, "volumes", id)
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Fatalf("DeleteVolume #%d: %v", i+1, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("volume directory still there: %v", err)
	}
	if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "vol-never-existed"}); err != nil {
		t.Fatalf("DeleteVolume of unknown volume: %v", err)
	}
	_, err = r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	wantCode(t, err, codes.InvalidArgument)

	// The name is free again and gives the same ID.
	again, err := r.ctrl.CreateVolume(ctx, createReq("pvc-del", 20*mib, 0))
	if err != nil {
		t.Fatal(err)
	}
	if again.GetVolume().GetVolumeId() != id || again.GetVolume().GetCapacityBytes() != 20*mib {
		t.Fatalf("re-created volume = %v", again.GetVolume())
	}
}

func TestControllerPublish(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{MultiNode: true}) // ModeAll registers node-1
	if err := registerNode(env.root, nodeRecord{NodeID: "node-2"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	create := func(name string) string {
		t.Helper()
		resp, err := r.ctrl.CreateVolume(ctx, createReq(name, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetVolume().GetVolumeId()
	}
	rwoVol, rwxVol := create("pvc-rwo"), create("pvc-rwx")
	rwx := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	pub := func(vol, node string, c *csi.VolumeCapability, ro bool) (*csi.ControllerPublishVolumeResponse, error) {
		return r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: node, VolumeCapability: c, Readonly: ro})
	}

	steps := []struct {
		name     string
		vol      string
		node     string
		cap      *csi.VolumeCapability
		readonly bool
		wantCode codes.Code
	}{
		{"publish", rwoVol, "node-1", rwo, false, codes.OK},
		{"again is idempotent", rwoVol, "node-1", rwo, false, codes.OK},
		{"again readonly is incompatible", rwoVol, "node-1", rwo, true, codes.AlreadyExists},
		{"single-node volume on a second node", rwoVol, "node-2", rwo, false, codes.FailedPrecondition},
		{"multi-node volume on node-1", rwxVol, "node-1", rwx, false, codes.OK},
		{"multi-node volume on node-2", rwxVol, "node-2", rwx, false, codes.OK},
		{"unknown volume", "vol-00000000000000000000", "node-1", rwo, false, codes.NotFound},
		{"unknown node", rwoVol, "node-9", rwo, false, codes.NotFound},
		{"no node", rwoVol, "", rwo, false, codes.InvalidArgument},
		{"no volume", "", "node-1", rwo, false, codes.InvalidArgument},
		{"no capability", rwoVol, "node-1", nil, false, codes.InvalidArgument},
	}
	for _, s := range steps {
		resp, err := pub(s.vol, s.node, s.cap, s.readonly)
		if got := status.Code(err); got != s.wantCode {
			t.Fatalf("%s: got %v (%v), want %v", s.name, got, err, s.wantCode)
		}
		if err == nil && resp.GetPublishContext()[PublishContextNodeKey] != s.node {
			t.Fatalf("%s: publish context = %v", s.name, resp.GetPublishContext())
		}
	}

	list, err := r.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]string{}
	for _, e := range list.GetEntries() {
		published[e.GetVolume().GetVolumeId()] = fmt.Sprint(e.GetStatus().GetPublishedNodeIds())
	}
	if published[rwoVol] != "[node-1]" || published[rwxVol] != "[node-1 node-2]" {
		t.Fatalf("published nodes = %v", published)
	}

	_, err = r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: rwoVol})
	wantCode(t, err, codes.FailedPrecondition)

	for i := range 2 {
		if _, err := r.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: rwoVol, NodeId: "node-1"}); err != nil {
			t.Fatalf("ControllerUnpublishVolume #%d: %v", i+1, err)
		}
	}
	// Now free for another node.
	if _, err := pub(rwoVol, "node-2", rwo, false); err != nil {
		t.Fatalf("publish on node-2 after unpublish: %v", err)
	}
	// An empty node ID unpublishes from every node.
	if _, err := r.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: rwxVol}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: "vol-gone", NodeId: "node-1"}); err != nil {
		t.Fatalf("unpublish of unknown volume: %v", err)
	}
	_, err = r.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{NodeId: "node-1"})
	wantCode(t, err, codes.InvalidArgument)
	if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: rwxVol}); err != nil {
		t.Fatalf("delete after unpublish: %v", err)
	}
}

func TestControllerPublishEnforcesNodeLimit(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{MaxVolumesPerNode: 2})
	ctx := context.Background()
	for i := range 3 {
		vol, err := r.ctrl.CreateVolume(ctx, createReq(fmt.Sprintf("pvc-%d", i), 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol.GetVolume().GetVolumeId(), NodeId: "node-1", VolumeCapability: rwo})
		want := codes.OK
		if i == 2 {
			want = codes.ResourceExhausted
		}
		wantCode(t, err, want)
	}
}

func TestListVolumesPages(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	created := map[string]bool{}
	for i := range 5 {
		resp, err := r.ctrl.CreateVolume(ctx, createReq(fmt.Sprintf("pvc-%d", i), 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		created[resp.GetVolume().GetVolumeId()] = true
	}

	for _, pageSize := range []int32{0, 1, 2, 5, 6} {
		t.Run(fmt.Sprintf("max_entries=%d", pageSize), func(t *testing.T) {
			seen := map[string]bool{}
			token := ""
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("pagination does not end")
				}
				resp, err := r.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: pageSize, StartingToken: token})
				if err != nil {
					t.Fatal(err)
				}
				if pageSize > 0 && len(resp.GetEntries()) > int(pageSize) {
					t.Fatalf("page of %d entries, max %d", len(resp.GetEntries()), pageSize)
				}
				for _, e := range resp.GetEntries() {
					id := e.GetVolume().GetVolumeId()
					if seen[id] {
						t.Fatalf("volume %s listed twice", id)
					}
					seen[id] = true
				}
				if token = resp.GetNextToken(); token == "" {
					break
				}
			}
			if len(seen) != len(created) {
				t.Fatalf("listed %d volumes, want %d", len(seen), len(created))
			}
		})
	}

	t.Run("token survives deleting the last listed volume", func(t *testing.T) {
		first, err := r.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2})
		if err != nil {
			t.Fatal(err)
		}
		last := first.GetEntries()[1].GetVolume().GetVolumeId()
		if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: last}); err != nil {
			t.Fatal(err)
		}
		rest, err := r.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: first.GetNextToken()})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rest.GetEntries()); got != 3 {
			t.Fatalf("second page has %d entries, want 3", got)
		}
	})

	for _, tc := range []struct {
		name string
		req  *csi.ListVolumesRequest
		want codes.Code
	}{
		{"invalid token", &csi.ListVolumesRequest{StartingToken: "invalid-token"}, codes.Aborted},
		{"negative max", &csi.ListVolumesRequest{MaxEntries: -1}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.ctrl.ListVolumes(ctx, tc.req)
			wantCode(t, err, tc.want)
		})
	}
}

func TestValidateVolumeCapabilities(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	vol, err := r.ctrl.CreateVolume(ctx, createReq("pvc-v", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	tests := []struct {
		name          string
		req           *csi.ValidateVolumeCapabilitiesRequest
		wantCode      codes.Code
		wantConfirmed bool
	}{
		{"supported", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{rwo}}, codes.OK, true},
		{"block unsupported", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{block}}, codes.OK, false},
		{"no id", &csi.ValidateVolumeCapabilitiesRequest{VolumeCapabilities: []*csi.VolumeCapability{rwo}}, codes.InvalidArgument, false},
		{"no capabilities", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id}, codes.InvalidArgument, false},
		{"unknown volume", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "vol-unknown", VolumeCapabilities: []*csi.VolumeCapability{rwo}}, codes.NotFound, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := r.ctrl.ValidateVolumeCapabilities(ctx, tc.req)
			wantCode(t, err, tc.wantCode)
			if err == nil && (resp.GetConfirmed() != nil) != tc.wantConfirmed {
				t.Fatalf("confirmed = %v, want confirmed %v", resp.GetConfirmed(), tc.wantConfirmed)
			}
		})
	}
}

func TestGetCapacity(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController})
	ctx := context.Background()
	resp, err := r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetAvailableCapacity() <= 0 {
		t.Fatalf("available capacity = %d", resp.GetAvailableCapacity())
	}
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	resp, err = r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{VolumeCapabilities: []*csi.VolumeCapability{block}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetAvailableCapacity() != 0 {
		t.Fatalf("capacity for block volumes = %d, want 0", resp.GetAvailableCapacity())
	}
}

// TestParameters: parameters the driver does not know go into the volume
// context by default; --strict-parameters refuses them, in CreateVolume,
// GetCapacity and ValidateVolumeCapabilities.
func TestParameters(t *testing.T) {
	ceph := map[string]string{"clusterID": "c1", "pool": "rbd", "imageFeatures": "layering"}
	tests := []struct {
		name        string
		strict      bool
		params      map[string]string
		wantCode    codes.Code
		wantContext map[string]string
	}{
		{"known only", false, map[string]string{"kind": "directory"}, codes.OK, map[string]string{VolumeContextKind: "directory"}},
		{"unknown passed on", false, ceph, codes.OK,
			map[string]string{"clusterID": "c1", "pool": "rbd", "imageFeatures": "layering", VolumeContextKind: "directory"}},
		{"the context's kind key is reserved", false, map[string]string{VolumeContextKind: "block"}, codes.InvalidArgument, nil},
		{"bad kind", false, map[string]string{"kind": "lvm", "pool": "rbd"}, codes.InvalidArgument, nil},
		{"strict: known only", true, map[string]string{"kind": "directory"}, codes.OK, map[string]string{VolumeContextKind: "directory"}},
		{"strict: unknown refused", true, ceph, codes.InvalidArgument, nil},
	}
	env := newTestEnv(t)
	loose := env.start(t, Config{Mode: ModeController})
	strict := env.start(t, Config{Mode: ModeController, StrictParameters: true, Endpoint: "unix://" + filepath.Join(env.dir, "strict.sock"), StateDir: filepath.Join(env.dir, "strict-state")})
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := loose
			if tc.strict {
				r = strict
			}
			req := createReq(fmt.Sprintf("pvc-params-%d", i), 0, 0)
			req.Parameters = tc.params
			resp, err := r.ctrl.CreateVolume(ctx, req)
			wantCode(t, err, tc.wantCode)
			_, capErr := r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{Parameters: tc.params})
			wantCode(t, capErr, tc.wantCode)
			if err != nil {
				return
			}
			if got := resp.GetVolume().GetVolumeContext(); !maps.Equal(got, tc.wantContext) {
				t.Fatalf("volume context = %v, want %v", got, tc.wantContext)
			}
			// The same name with other parameters is another volume.
			other := createReq(req.GetName(), 0, 0)
			other.Parameters = map[string]string{"kind": "directory", "pool": "elsewhere"}
			if !tc.strict {
				_, err := r.ctrl.CreateVolume(ctx, other)
				wantCode(t, err, codes.AlreadyExists)
			}
			v, err := r.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
				VolumeId: resp.GetVolume().GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{rwo}, Parameters: ceph})
			wantCode(t, err, codes.OK)
			if confirmed := v.GetConfirmed() != nil; confirmed == tc.strict {
				t.Fatalf("ValidateVolumeCapabilities with unknown parameters: confirmed %v, strict %v (%s)", confirmed, tc.strict, v.GetMessage())
			}
		})
	}
}

// TestAccessModes: without --multi-node only the single-node modes are
// supported, and the others refused with the codes the CSI spec gives for
// each call; with it a volume is published to two nodes.
func TestAccessModes(t *testing.T) {
	rwx := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	rox := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)
	sssw := mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)
	for _, multi := range []bool{false, true} {
		t.Run(fmt.Sprintf("multi-node=%t", multi), func(t *testing.T) {
			env := newTestEnv(t)
			r := env.start(t, Config{MultiNode: multi})
			if err := registerNode(env.root, nodeRecord{NodeID: "node-2"}); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			single, err := r.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-single", VolumeCapabilities: []*csi.VolumeCapability{sssw}})
			if err != nil {
				t.Fatal(err)
			}
			id := single.GetVolume().GetVolumeId()
			refused := codes.OK
			if !multi {
				refused = codes.InvalidArgument
			}
			for _, c := range []*csi.VolumeCapability{rwx, rox} {
				_, err := r.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-" + c.GetAccessMode().GetMode().String(), VolumeCapabilities: []*csi.VolumeCapability{c}})
				wantCode(t, err, refused)
				v, err := r.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{c}})
				wantCode(t, err, codes.OK)
				if (v.GetConfirmed() != nil) != multi {
					t.Fatalf("ValidateVolumeCapabilities %s: confirmed %v (%s)", c.GetAccessMode().GetMode(), v.GetConfirmed(), v.GetMessage())
				}
				capResp, err := r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{VolumeCapabilities: []*csi.VolumeCapability{c}})
				wantCode(t, err, codes.OK)
				if (capResp.GetAvailableCapacity() > 0) != multi {
					t.Fatalf("GetCapacity %s = %d", c.GetAccessMode().GetMode(), capResp.GetAvailableCapacity())
				}
			}
			// The node service refuses what it does not support as the
			// spec's "Exceeds capabilities".
			nodeRefused := codes.NotFound // the volume vol-x does not exist
			if !multi {
				nodeRefused = codes.FailedPrecondition
			}
			abs := filepath.Join(env.dir, "p")
			_, err = r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-x", StagingTargetPath: abs, VolumeCapability: rwx})
			wantCode(t, err, nodeRefused)
			_, err = r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-x", StagingTargetPath: abs, TargetPath: abs + "t", VolumeCapability: rwx})
			wantCode(t, err, nodeRefused)

			// A single-node mode is published to one node only, whatever the flag.
			_, err = r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "node-1", VolumeCapability: sssw})
			wantCode(t, err, codes.OK)
			_, err = r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "node-2", VolumeCapability: sssw})
			wantCode(t, err, codes.FailedPrecondition)
			if !multi {
				_, err = r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "node-2", VolumeCapability: rwx})
				wantCode(t, err, codes.InvalidArgument)
				return
			}
			shared, err := r.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-shared", VolumeCapabilities: []*csi.VolumeCapability{rox}})
			if err != nil {
				t.Fatal(err)
			}
			for _, node := range []string{"node-1", "node-2"} {
				resp, err := r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
					VolumeId: shared.GetVolume().GetVolumeId(), NodeId: node, VolumeCapability: rox, Readonly: true})
				wantCode(t, err, codes.OK)
				if resp.GetPublishContext()[PublishContextReadonly] != "true" {
					t.Fatalf("readonly publish to %s: publish context %v", node, resp.GetPublishContext())
				}
			}
		})
	}
}
