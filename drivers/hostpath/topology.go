package hostpath

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Topology: every node reports the segment {TopologyKeyNode: <node ID>} and,
// when it was given a zone, {TopologyKeyZone: <zone>}. A volume lives in one
// zone's storage pool and is accessible from every node of that zone. All
// plugin processes of a run share one root, so the zones are a simulation:
// the plugin enforces them (CreateVolume placement, pool capacity,
// ControllerPublishVolume to a node of another zone) without anything
// physical behind them.

// TopologyKeyZone is the topology segment key NodeGetInfo reports the
// node's zone under, and the one volumes are constrained by.
const TopologyKeyZone = "topology.hostpath.csisim.io/zone"

// checkZone accepts what Kubernetes accepts as a label value, since the
// zone comes from the node's topology.kubernetes.io/zone label and ends up
// in node labels again.
func checkZone(zone string) error {
	if errs := validation.IsValidLabelValue(zone); len(errs) > 0 {
		return fmt.Errorf("zone %q: %s", zone, strings.Join(errs, "; "))
	}
	return nil
}

// zoneTopology is the accessible topology of a volume in zone; nil for the
// zone-less pool, whose volumes every node can reach.
func zoneTopology(zone string) []*csi.Topology {
	if zone == "" {
		return nil
	}
	return []*csi.Topology{{Segments: map[string]string{TopologyKeyZone: zone}}}
}

// errUnknownTopologyKey marks a segment that names a key this driver never
// reports; such a segment can never be satisfied.
type errUnknownTopologyKey struct{ key string }

func (e errUnknownTopologyKey) Error() string {
	return fmt.Sprintf("unknown topology key %q (known: %s, %s)", e.key, TopologyKeyNode, TopologyKeyZone)
}

// segmentZone resolves a topology segment to the zone it lies in. ok is
// false if no registered node matches the segment: nothing can be
// provisioned where there is no node.
func segmentZone(seg map[string]string, nodes []nodeRecord) (zone string, ok bool, err error) {
	for k := range seg {
		if k != TopologyKeyNode && k != TopologyKeyZone {
			return "", false, errUnknownTopologyKey{k}
		}
	}
	for _, n := range nodes {
		if nodeMatches(n, seg) {
			return n.Zone, true, nil
		}
	}
	return "", false, nil
}

// nodeMatches reports whether every key of seg has the node's value.
func nodeMatches(n nodeRecord, seg map[string]string) bool {
	have := n.segments()
	for k, v := range seg {
		if have[k] != v {
			return false
		}
	}
	return true
}

// poolUsed adds up the capacity of the volumes in a zone's pool; the caller
// holds mu.
func (d *Driver) poolUsed(zone string) int64 {
	var used int64
	for _, v := range d.state.Volumes {
		if v.Zone == zone {
			used += v.CapacityBytes
		}
	}
	return used
}

// poolFree is what is left in a zone's pool; unlimited pools have no end.
func (d *Driver) poolFree(zone string) (free int64, limited bool) {
	if d.cfg.CapacityPerZone == 0 {
		return 0, false
	}
	return max(d.cfg.CapacityPerZone-d.poolUsed(zone), 0), true
}

func (d *Driver) poolFits(zone string, bytes int64) bool {
	free, limited := d.poolFree(zone)
	return !limited || bytes <= free
}

// knownZones lists the zones of the registered nodes; a run whose nodes
// report no zone, or that has no node yet, has the one zone-less pool "".
func knownZones(nodes []nodeRecord) []string {
	set := map[string]bool{}
	for _, n := range nodes {
		set[n.Zone] = true
	}
	if len(set) == 0 {
		return []string{""}
	}
	return slices.Sorted(maps.Keys(set))
}

// placeVolume picks the zone of a new volume of the given capacity. With
// accessibility requirements it tries the preferred segments in order, then
// the requisite ones, and takes the first whose zone has room, as the spec
// asks. Without, it takes the zone with the most room left. Errors are
// gRPC statuses: InvalidArgument for segments that can never be satisfied
// (unknown keys), ResourceExhausted when the segments are valid but no pool
// they reach has room (or no node is there), which a CO may retry later.
// The caller holds mu.
func (d *Driver) placeVolume(req *csi.TopologyRequirement, capacity int64) (string, error) {
	nodes, err := listNodes(d.root)
	if err != nil {
		return "", status.Errorf(codes.Internal, "CreateVolume: %v", err)
	}
	candidates := append(slices.Clone(req.GetPreferred()), req.GetRequisite()...)
	if len(candidates) == 0 {
		// Most room left; for unlimited pools, least used: either way
		// volumes spread over the zones.
		best, bestFree, found := "", int64(-1), false
		for _, zone := range knownZones(nodes) {
			free, limited := d.poolFree(zone)
			if !limited {
				free = math.MaxInt64 - d.poolUsed(zone)
			}
			if free >= capacity && free > bestFree {
				best, bestFree, found = zone, free, true
			}
		}
		if !found {
			return "", status.Errorf(codes.ResourceExhausted, "CreateVolume: no storage pool has %d bytes left (pool size %d bytes per zone)", capacity, d.cfg.CapacityPerZone)
		}
		return best, nil
	}

	var reasons []string
	valid := false
	for _, topo := range candidates {
		seg := topo.GetSegments()
		zone, ok, err := segmentZone(seg, nodes)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%v: %v", seg, err))
			continue
		}
		valid = true
		switch {
		case !ok:
			reasons = append(reasons, fmt.Sprintf("%v: no registered node is there", seg))
		case !d.poolFits(zone, capacity):
			free, _ := d.poolFree(zone)
			reasons = append(reasons, fmt.Sprintf("%v: pool of zone %q has %d bytes left", seg, zone, free))
		default:
			return zone, nil
		}
	}
	code := codes.ResourceExhausted
	if !valid {
		code = codes.InvalidArgument
	}
	return "", status.Errorf(code, "CreateVolume: cannot place %d bytes in any requested topology: %s", capacity, strings.Join(reasons, "; "))
}

// capacityIn answers GetCapacity for one topology segment, or for the whole
// system if seg is nil: the bytes left, and the largest volume that still
// fits. The caller holds mu.
func (d *Driver) capacityIn(seg map[string]string) (available, maxVolume int64, err error) {
	nodes, err := listNodes(d.root)
	if err != nil {
		return 0, 0, err
	}
	zones := knownZones(nodes)
	if seg != nil {
		zone, ok, err := segmentZone(seg, nodes)
		if err != nil || !ok {
			// No volume can be provisioned there: report none left.
			return 0, 0, nil
		}
		zones = []string{zone}
	}
	if d.cfg.CapacityPerZone == 0 {
		// Unlimited pools draw on the file system holding the root.
		var fs unix.Statfs_t
		if err := unix.Statfs(d.volumesDir(), &fs); err != nil {
			return 0, 0, fmt.Errorf("statfs %s: %w", d.volumesDir(), err)
		}
		free := int64(fs.Bavail) * fs.Bsize
		return free, free, nil
	}
	for _, zone := range zones {
		free, _ := d.poolFree(zone)
		available += free
		maxVolume = max(maxVolume, free)
	}
	return available, maxVolume, nil
}
