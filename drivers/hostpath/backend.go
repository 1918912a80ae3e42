package hostpath

// What the storage system's operator can change under a running driver —
// the backend side of the driver, not CSI. A cloud lowers how many disks
// an instance can take when network interfaces take its attach slots (the
// case KEP-4876, the mutable CSINode allocatable count, was made for):
// the node plugin's NodeGetInfo then reports the new limit and
// ControllerPublishVolume enforces it. csisim's fault steps call these
// (nodeVolumeLimit) on the run's backend; the driver processes see the
// change at their next call, as they would a cloud's.

import (
	"fmt"
)

// SetNodeVolumeLimit changes how many volumes the backend lets the node
// take (0: unlimited). The node's plugin must have registered it: the
// backend knows no other nodes. A node plugin started again reports its
// --max-volumes-per-node anew, as a driver that reads its limit from its
// configuration at start.
func SetNodeVolumeLimit(root, nodeID string, limit int64) error {
	if limit < 0 {
		return fmt.Errorf("node %s: a volume limit must not be negative, got %d", nodeID, limit)
	}
	rec, ok, err := lookupNode(root, nodeID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("node %s: no node plugin has registered it in the backend %s", nodeID, root)
	}
	rec.MaxVolumesPerNode = limit
	return registerNode(root, rec)
}
