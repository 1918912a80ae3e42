package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/csiclient"
)

// controllerNodeID is {nodeID} for the split layout's controller plugin.
const controllerNodeID = "controller"

// checkDriverLayout looks, once the cluster is up, for the mistakes that
// make a third-party driver fail later for no visible reason: node
// plugins that call themselves by the same node ID, and a driver that
// serves the node service in the split layout's controller process, which
// pins the volumes it makes to the node "controller" no pod runs on.
// Duplicate node IDs stop the start; what is only suspect is kept for
// Hints.
func (c *Cluster) checkDriverLayout(ctx context.Context) error {
	byID := map[string][]string{}
	for _, node := range c.cfg.Nodes {
		csiNode, err := c.clients.client("csisim").StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			continue // the kubelet reports its own registration errors
		}
		for _, d := range csiNode.Spec.Drivers {
			if d.Name != c.cfg.DriverName {
				continue
			}
			byID[d.NodeID] = append(byID[d.NodeID], node)
			if d.NodeID != node {
				c.notes = append(c.notes, fmt.Sprintf("the node plugin on %s answers NodeGetInfo with node_id %q, not the node's name: "+
					"if the driver's node ID should come from csisim, its command must pass {nodeID}", node, d.NodeID))
			}
		}
	}
	for id, nodes := range byID {
		if len(nodes) > 1 {
			return fmt.Errorf("the node plugins on %s all answer NodeGetInfo with node_id %q, so ControllerPublishVolume and the "+
				"scheduler cannot tell those nodes apart: the driver's node ID flag must be {nodeID} in its command (csisim passes each node's name), "+
				"or the driver serves one node only", strings.Join(nodes, ", "), id)
		}
	}
	if ctrl := c.driver.controllerPlugin(); c.Layout() != LayoutSplit || ctrl == nil || ctrl.mock != nil {
		return nil
	}
	c.noteControllerNode(ctx)
	return nil
}

// noteControllerNode asks the split layout's controller plugin, past
// its fault proxy (so the run's timeline does not show it), whether it
// serves the node service too. One that does and reports a topology of
// its own may place every volume it makes on the node "controller";
// Hints says so when a volume is.
func (c *Cluster) noteControllerNode(ctx context.Context) {
	conn, err := csiclient.Dial(c.driver.controllerPlugin().driverEndpoint, "csisim", nil)
	if err != nil {
		return // the components' own connections report it
	}
	defer conn.Close()
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	info, err := conn.Node.NodeGetInfo(callCtx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return // no node service in the controller process: as it should be
	}
	var pinned []string
	for key, value := range info.GetAccessibleTopology().GetSegments() {
		if value != "" && (value == controllerNodeID || value == info.GetNodeId()) {
			pinned = append(pinned, key+"="+value)
		}
	}
	sort.Strings(pinned)
	// Not fatal, and no hint of its own: a driver whose processes share
	// their volumes (csisim's own, run from one command line) places
	// volumes by the topology the provisioner asks for, not by its own.
	// It explains a volume that does get pinned there (Hints).
	if len(pinned) > 0 {
		c.controllerTopology = strings.Join(pinned, ", ")
	}
}

// Hints say what in the cluster's set-up may be why a wait timed out: the
// suspicions checkDriverLayout kept, claims whose StorageClass names a
// provisioner no driver in this run serves, and volumes pinned to a node
// that does not exist. They are for a failed step's message, not problems
// of the run.
func (c *Cluster) Hints(ctx context.Context) (hints []string) {
	// The suspicions from the start come last: what the objects show is
	// more likely why this wait failed.
	defer func() { hints = append(hints, c.notes...) }()
	cs := c.clients.client("csisim")
	claims, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return hints
	}
	classes := map[string]string{} // name → provisioner
	if list, err := cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); err == nil {
		for _, sc := range list.Items {
			classes[sc.Name] = sc.Provisioner
		}
	}
	for _, pvc := range claims.Items {
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.StorageClassName == nil {
			continue
		}
		class := *pvc.Spec.StorageClassName
		prov, ok := classes[class]
		if !ok || slices.Contains(c.DriverNames(), prov) || !strings.Contains(prov, ".") {
			continue // no class (the claim's events say so), ours, or an in-tree name
		}
		hints = append(hints, fmt.Sprintf("claim %s/%s is Pending: its StorageClass %s names provisioner %s, but the driver in this run is %s, "+
			"so nothing provisions it (a scenario for any driver names the driver's class as ${driver.storageClass}; or run it with a profile of %s)", pvc.Namespace, pvc.Name, class, prov, c.cfg.DriverName, prov))
	}
	nodes := map[string]bool{}
	for _, n := range c.cfg.Nodes {
		nodes[n] = true
	}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return hints
	}
	for _, pv := range pvs.Items {
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			for _, req := range term.MatchExpressions {
				for _, v := range req.Values {
					if v == controllerNodeID && !nodes[v] {
						why := ""
						if c.controllerTopology != "" {
							why = " (the controller process also serves the node service, with topology " + c.controllerTopology + ")"
						}
						hints = append(hints, fmt.Sprintf("PersistentVolume %s is pinned to %s=%s, the controller process's {nodeID} in layout split, "+
							"where no pod can run%s: the driver runs controller and node in one process; use layout: combined in its profile", pv.Name, req.Key, v, why))
					}
				}
			}
		}
	}
	return hints
}
