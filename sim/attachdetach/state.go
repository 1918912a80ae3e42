package attachdetach

import (
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/csisim/csisim/sim/migration"
)

// attachment is one entry of the controller's actual state of the world:
// a volume it believes attached to a node, or possibly attached.
type attachment struct {
	name   string // the VolumeAttachment's name
	node   string
	volume corev1.UniqueVolumeName
	// confirmed: the attachment is known to have succeeded; otherwise it
	// is uncertain (found at start without being in the node's status, or
	// an attach that failed).
	confirmed bool
	// mounted: the node's kubelet lists the volume in volumesInUse. A new
	// entry is taken as mounted until the node says otherwise.
	mounted bool
	// detachRequested is when the controller first found no pod wanting
	// the volume on the node; zero while one does.
	detachRequested time.Time
	// detaching: the controller deleted the VolumeAttachment and waits for
	// it to go; the volume is no longer reported in volumesAttached.
	detaching bool
}

// operation is an attach under way: one waiting for the external-attacher
// (waitingSince), or one that failed and is retried after a backoff.
type operation struct {
	node      string
	failures  int
	notBefore time.Time
	// waitingSince is when the current attach operation began to wait for
	// the VolumeAttachment to be attached; zero when none waits.
	waitingSince time.Time
}

// forget drops everything the controller knows; the caller holds c.mu
// (or is New).
func (c *Controller) forget() {
	c.populated = false
	c.actual = map[string]*attachment{}
	c.onNode = map[string]map[string]*attachment{}
	c.ofVolume = map[corev1.UniqueVolumeName]map[string]*attachment{}
	c.attaching = map[string]*operation{}
	c.multiReported = map[string]string{}
}

// populate builds the actual state of the world once after a start, as
// the real controller does before its first reconcile: every volume in a
// Node's status.volumesAttached is attached (mounted if the node lists it
// in volumesInUse), and every VolumeAttachment not already known is
// uncertain — possibly attached, so that it is detached if no pod wants it.
func (c *Controller) populate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.populated {
		return
	}
	c.populated = true
	nodes, _ := c.nodes.List(labels.Everything())
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, node := range nodes {
		for _, av := range node.Status.VolumesAttached {
			driver, handle, ok := splitUniqueName(av.Name)
			if !ok {
				continue
			}
			name := AttachmentName(handle, driver, node.Name)
			c.putActual(&attachment{name: name, node: node.Name, volume: av.Name, confirmed: true,
				mounted: slices.Contains(node.Status.VolumesInUse, av.Name)})
		}
	}
	vas, _ := c.vas.List(labels.Everything())
	for _, va := range vas {
		if c.actual[va.Name] != nil || va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		pv, err := c.volumes.Get(*va.Spec.Source.PersistentVolumeName)
		if err == nil {
			pv = migration.CSIPV(pv) // as the real one's createVolumeSpec
		}
		if err != nil || pv == nil || pv.Spec.CSI == nil {
			continue // the real controller skips attachments it cannot resolve
		}
		c.putActual(&attachment{name: va.Name, node: va.Spec.NodeName,
			volume: UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle), mounted: true})
	}
}

// splitUniqueName reads kubernetes.io/csi/<driver>^<handle>.
func splitUniqueName(u corev1.UniqueVolumeName) (driver, handle string, ok bool) {
	rest, found := strings.CutPrefix(string(u), "kubernetes.io/csi/")
	if !found {
		return "", "", false
	}
	return strings.Cut(rest, "^")
}

// observeVolumesInUse records which of the node's attachments its kubelet
// says it uses, on every add and update of the Node, as the real controller
// does. After a restart the controller takes every attachment it finds as
// mounted until the node is next updated — which a kubelet does at least
// every five minutes (its node status report) — so a stale attachment
// found at start is detached only then.
func (c *Controller) observeVolumesInUse(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.actual {
		if a.node == node.Name {
			a.mounted = slices.Contains(node.Status.VolumesInUse, a.volume)
		}
	}
}

// detached removes an attachment the controller was detaching once its
// VolumeAttachment is gone. One that goes without the controller asking
// stays in its memory, as in the real controller.
func (c *Controller) detached(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.actual[name]; a != nil && a.detaching {
		c.removeActual(a)
	}
}

// forgetUnwanted drops the attach retries and Multi-Attach reports of the
// node's attachments no pod wants any more.
func (c *Controller) forgetUnwanted(nodeName string, desired map[string]*wanted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, node := range c.multiReported {
		if node == nodeName && desired[name] == nil {
			delete(c.multiReported, name)
		}
	}
	for name, op := range c.attaching {
		if op.node == nodeName && desired[name] == nil {
			delete(c.attaching, name)
		}
	}
}

// entriesOn lists the node's attachments in name order; the caller holds
// c.mu.
func (c *Controller) entriesOn(nodeName string) []*attachment {
	var out []*attachment
	for _, a := range c.onNode[nodeName] {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// putActual records an attachment in the actual state, indexed by its node
// and its volume (neither changes once it is made); the caller holds c.mu.
func (c *Controller) putActual(a *attachment) {
	if old := c.actual[a.name]; old != nil {
		c.removeActual(old)
	}
	c.actual[a.name] = a
	if c.onNode[a.node] == nil {
		c.onNode[a.node] = map[string]*attachment{}
	}
	c.onNode[a.node][a.name] = a
	if c.ofVolume[a.volume] == nil {
		c.ofVolume[a.volume] = map[string]*attachment{}
	}
	c.ofVolume[a.volume][a.name] = a
}

// removeActual drops an attachment from the actual state; the caller holds
// c.mu.
func (c *Controller) removeActual(a *attachment) {
	delete(c.actual, a.name)
	delete(c.onNode[a.node], a.name)
	if len(c.onNode[a.node]) == 0 {
		delete(c.onNode, a.node)
	}
	delete(c.ofVolume[a.volume], a.name)
	if len(c.ofVolume[a.volume]) == 0 {
		delete(c.ofVolume, a.volume)
	}
}
