package hostpath

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func segment(kv ...string) *csi.Topology {
	seg := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		seg[kv[i]] = kv[i+1]
	}
	return &csi.Topology{Segments: seg}
}

func zoneOf(v *csi.Volume) string {
	if len(v.GetAccessibleTopology()) != 1 {
		return ""
	}
	return v.GetAccessibleTopology()[0].GetSegments()[TopologyKeyZone]
}

func TestNodeGetInfoReportsZone(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeNode, NodeID: "worker-1", Zone: "zone-a"})
	info, err := r.node.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	seg := info.GetAccessibleTopology().GetSegments()
	if len(seg) != 2 || seg[TopologyKeyNode] != "worker-1" || seg[TopologyKeyZone] != "zone-a" {
		t.Fatalf("topology = %v", seg)
	}
	if rec, ok, err := lookupNode(env.root, "worker-1"); err != nil || !ok || rec.Zone != "zone-a" {
		t.Fatalf("node record = %+v, %v, %v", rec, ok, err)
	}
	caps, err := r.id.GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	constraints := false
	for _, c := range caps.GetCapabilities() {
		constraints = constraints || c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS
	}
	if !constraints {
		t.Fatalf("VOLUME_ACCESSIBILITY_CONSTRAINTS not advertised: %v", caps)
	}
	if _, err := New(Config{Endpoint: "unix://" + env.dir + "/bad.sock", Root: env.root, NodeID: "n", Zone: "not a zone!"}); err == nil {
		t.Fatal("New accepted an invalid zone")
	}
}

func TestTopologyPlacementAndPools(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{Mode: ModeController, CapacityPerZone: 100 * mib})
	ctx := context.Background()
	for _, n := range []nodeRecord{{NodeID: "a1", Zone: "zone-a"}, {NodeID: "a2", Zone: "zone-a"}, {NodeID: "b1", Zone: "zone-b"}} {
		if err := registerNode(env.root, n); err != nil {
			t.Fatal(err)
		}
	}
	create := func(name string, size int64, req *csi.TopologyRequirement) (*csi.Volume, error) {
		cr := createReq(name, size, 0)
		cr.AccessibilityRequirements = req
		resp, err := r.ctrl.CreateVolume(ctx, cr)
		return resp.GetVolume(), err
	}
	capacity := func(seg *csi.Topology) (int64, int64) {
		t.Helper()
		resp, err := r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: seg})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetAvailableCapacity(), resp.GetMaximumVolumeSize().GetValue()
	}

	steps := []struct {
		name     string
		size     int64
		req      *csi.TopologyRequirement
		wantZone string
		wantCode codes.Code
	}{
		{"requisite zone", 10 * mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{segment(TopologyKeyZone, "zone-b")}}, "zone-b", codes.OK},
		{"preferred node first", 10 * mib, &csi.TopologyRequirement{
			Requisite: []*csi.Topology{segment(TopologyKeyNode, "b1"), segment(TopologyKeyNode, "a2")},
			Preferred: []*csi.Topology{segment(TopologyKeyNode, "a2")},
		}, "zone-a", codes.OK},
		{"node and zone", 10 * mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{segment(TopologyKeyNode, "a1", TopologyKeyZone, "zone-a")}}, "zone-a", codes.OK},
		{"node in another zone", 10 * mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{segment(TopologyKeyNode, "a1", TopologyKeyZone, "zone-b")}}, "", codes.ResourceExhausted},
		{"unknown node", 10 * mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{segment(TopologyKeyNode, "z9")}}, "", codes.ResourceExhausted},
		{"zone without nodes", 10 * mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{segment(TopologyKeyZone, "zone-c")}}, "", codes.ResourceExhausted},
		{"unknown key", 10 * mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{segment("kubernetes.io/hostname", "a1")}}, "", codes.InvalidArgument},
		// zone-a has 80 MiB left.
		{"too large for the preferred zone", 85 * mib, &csi.TopologyRequirement{
			Requisite: []*csi.Topology{segment(TopologyKeyZone, "zone-a"), segment(TopologyKeyZone, "zone-b")},
			Preferred: []*csi.Topology{segment(TopologyKeyZone, "zone-a")},
		}, "zone-b", codes.OK},
		{"too large for any zone", 81 * mib, nil, "", codes.ResourceExhausted},
		{"no requirements: the zone with most room", 30 * mib, nil, "zone-a", codes.OK},
	}
	for _, s := range steps {
		vol, err := create("pvc-"+s.name, s.size, s.req)
		wantCode(t, err, s.wantCode)
		if err == nil && zoneOf(vol) != s.wantZone {
			t.Fatalf("%s: volume placed in zone %q (topology %v), want %q", s.name, zoneOf(vol), vol.GetAccessibleTopology(), s.wantZone)
		}
	}
	// zone-a: 10+10+30 used; zone-b: 10+85.
	if avail, maxVol := capacity(segment(TopologyKeyZone, "zone-a")); avail != 50*mib || maxVol != 50*mib {
		t.Fatalf("zone-a capacity = %d (max volume %d), want 50 MiB", avail, maxVol)
	}
	if avail, _ := capacity(segment(TopologyKeyNode, "b1")); avail != 5*mib {
		t.Fatalf("capacity at node b1 = %d, want 5 MiB", avail)
	}
	if avail, maxVol := capacity(nil); avail != 55*mib || maxVol != 50*mib {
		t.Fatalf("total capacity = %d (max volume %d), want 55 MiB (50 MiB)", avail, maxVol)
	}
	if avail, _ := capacity(segment(TopologyKeyZone, "zone-c")); avail != 0 {
		t.Fatalf("capacity of a zone without nodes = %d", avail)
	}

	// Deleting frees the pool; expanding takes from it.
	big := volumeIDFor("pvc-too large for the preferred zone")
	if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: big}); err != nil {
		t.Fatal(err)
	}
	if avail, _ := capacity(segment(TopologyKeyZone, "zone-b")); avail != 90*mib {
		t.Fatalf("zone-b capacity after delete = %d, want 90 MiB", avail)
	}
	small := volumeIDFor("pvc-requisite zone")
	_, err := r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: small, CapacityRange: &csi.CapacityRange{RequiredBytes: 101 * mib}})
	wantCode(t, err, codes.ResourceExhausted)
	if _, err := r.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: small, CapacityRange: &csi.CapacityRange{RequiredBytes: 100 * mib}}); err != nil {
		t.Fatal(err)
	}
	if avail, _ := capacity(segment(TopologyKeyZone, "zone-b")); avail != 0 {
		t.Fatalf("zone-b capacity after expansion = %d, want 0", avail)
	}

	// A volume is reachable from its zone only.
	pub := func(node string) error {
		_, err := r.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: small, NodeId: node, VolumeCapability: rwo})
		return err
	}
	wantCode(t, pub("a1"), codes.FailedPrecondition)
	if err := pub("b1"); err != nil {
		t.Fatal(err)
	}

	// Capabilities the pools cannot hold give no capacity.
	resp, err := r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{VolumeCapabilities: []*csi.VolumeCapability{rwoBlock}})
	if err != nil || resp.GetAvailableCapacity() != 0 {
		t.Fatalf("capacity for block access on directory volumes = %v, %v", resp, err)
	}
	resp, err = r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{VolumeCapabilities: []*csi.VolumeCapability{rwoBlock}, Parameters: blockParams})
	if err != nil || resp.GetAvailableCapacity() != 50*mib {
		t.Fatalf("capacity for block volumes = %v, %v", resp, err)
	}
	_, err = r.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{Parameters: map[string]string{"kind": "tape"}})
	wantCode(t, err, codes.InvalidArgument)
}

// Without zones, every node shares one pool and volumes have no topology:
// they are accessible everywhere.
func TestNoZones(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{CapacityPerZone: 10 * mib}) // ModeAll registers node-1
	ctx := context.Background()
	cr := createReq("pvc-1", 6*mib, 0)
	cr.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{segment(TopologyKeyNode, "node-1")}}
	resp, err := r.ctrl.CreateVolume(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if top := resp.GetVolume().GetAccessibleTopology(); top != nil {
		t.Fatalf("volume topology = %v, want none", top)
	}
	_, err = r.ctrl.CreateVolume(ctx, createReq("pvc-2", 6*mib, 0))
	wantCode(t, err, codes.ResourceExhausted)
	if _, err := r.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctrl.CreateVolume(ctx, createReq("pvc-2", 6*mib, 0)); err != nil {
		t.Fatalf("CreateVolume after the pool was freed: %v", err)
	}
}

// TestNoTopology: with --no-topology the driver declares no topology
// constraints, its node none, and a requirement a CO sends anyway (an
// allowedTopologies key it never reports) does not stop CreateVolume.
func TestNoTopology(t *testing.T) {
	env := newTestEnv(t)
	r := env.start(t, Config{NoTopology: true})
	ctx := context.Background()
	caps, err := r.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps.GetCapabilities() {
		if c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS {
			t.Fatalf("VOLUME_ACCESSIBILITY_CONSTRAINTS advertised: %v", caps)
		}
	}
	info, err := r.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetAccessibleTopology() != nil || info.GetNodeId() != "node-1" {
		t.Fatalf("NodeGetInfo = %v", info)
	}
	req := createReq("pvc-anywhere", 0, 0)
	req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{"topology.kubernetes.io/region": "IDC-HL"}}}}
	resp, err := r.ctrl.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetVolume().GetAccessibleTopology() != nil {
		t.Fatalf("accessible topology = %v", resp.GetVolume().GetAccessibleTopology())
	}
	// With topology, the same requirement names a key the driver never
	// reports.
	topo := env.start(t, Config{Mode: ModeController, Endpoint: "unix://" + filepath.Join(env.dir, "topo.sock"), StateDir: filepath.Join(env.dir, "topo-state")})
	req.Name = "pvc-somewhere"
	_, err = topo.ctrl.CreateVolume(ctx, req)
	wantCode(t, err, codes.InvalidArgument)
	if _, err := New(Config{Endpoint: "unix://" + env.dir + "/bad.sock", Root: env.root, NodeID: "n", Zone: "zone-a", NoTopology: true}); err == nil {
		t.Fatal("New accepted a zone without topology")
	}
}
