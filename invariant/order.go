package invariant

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/trace"
)

// callOrder: the CSI calls keep the order of the volume lifecycle, volume
// by volume and node by node. The checking is faultproxy.CheckOrder's,
// over the run's CSI entries instead of a proxy's history.
var callOrder = Invariant{
	Name: "csi-call-order",
	Doc:  "CSI calls keep the lifecycle order per volume and node (no NodePublish before NodeStage, no ControllerUnpublish while staged, no DeleteVolume while published, ...)",
	Check: func(h *History) []Violation {
		lc := faultproxy.Lifecycle{AttachNotRequired: attachNotRequired(h)}
		var found []Violation
		down := nodesDown(h.Entries)
		for _, v := range faultproxy.CheckOrder(asProxyCalls(h.Entries), lc) {
			if forced(v, h.Entries, down) {
				continue
			}
			found = append(found, Violation{Message: string(v.Kind) + ": " + v.Message, Entries: append([]int{v.Call}, v.Related...)})
		}
		return found
	},
}

// forced: a detach or delete that the order forbids only because of what
// a node that was down at the time still had staged or published. The
// attach/detach controller detaches from an unhealthy node after
// maxWaitForUnmountDuration, or at once with the out-of-service taint,
// knowing the node cannot clean up: Kubernetes does this on purpose.
func forced(v faultproxy.Violation, entries []trace.Entry, down func(node string, seq int) bool) bool {
	if v.Kind != faultproxy.DetachInUse && v.Kind != faultproxy.DeleteInUse {
		return false
	}
	for _, seq := range v.Related {
		c := entries[seq-1].Call
		if c == nil || c.Node == "" || !down(c.Node, v.Call) {
			return false // controller-published, or in use on a live node
		}
	}
	return len(v.Related) > 0
}

// nodesDown returns a function that says whether a node was down (not
// Ready, or gone) at timeline entry seq, by the Node writes before it.
func nodesDown(entries []trace.Entry) func(node string, seq int) bool {
	type change struct {
		seq   int
		ready bool
	}
	history := map[string][]change{}
	for _, e := range entries {
		w := e.Write
		if w == nil || w.Kind != "Node" {
			continue
		}
		ready := false
		if n, ok := w.Object.(*corev1.Node); ok && !w.Removed {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}
		}
		history[w.Name] = append(history[w.Name], change{e.Seq, ready})
	}
	return func(node string, seq int) bool {
		changes := history[node]
		i := sort.Search(len(changes), func(i int) bool { return changes[i].seq >= seq })
		return i > 0 && !changes[i-1].ready
	}
}

// asProxyCalls turns the CSI entries into the calls CheckOrder reads. The
// timeline orders them by entry: a call arrives just after the last entry
// there was when it was sent (StartedAfter) and its answer comes with its
// own entry, so CheckOrder judges it by what was known when it was sent,
// even when every call happened at the same virtual instant.
func asProxyCalls(entries []trace.Entry) []faultproxy.Call {
	var base time.Time
	var out []faultproxy.Call
	for _, e := range entries {
		c := e.Call
		if e.Kind != trace.CSI || c == nil {
			continue
		}
		start := base.Add(time.Duration(2*c.StartedAfter + 1))
		end := base.Add(time.Duration(2 * e.Seq))
		out = append(out, faultproxy.Call{
			Seq: e.Seq, Proxy: e.Actor, Method: e.Verb, VolumeID: c.Volume, Name: c.Name, NodeID: c.NodeID,
			StagingPath: c.StagingPath, TargetPath: c.TargetPath, Ephemeral: c.Ephemeral, Code: c.Code, Message: e.Err,
			Start: start, Duration: end.Sub(start), Forwarded: true, Capabilities: c.Capabilities,
		})
	}
	return out
}

// attachNotRequired: the run's CSIDrivers (as last written) all say
// attachRequired: false, so the CO never calls ControllerPublishVolume.
func attachNotRequired(h *History) bool {
	drivers := map[string]bool{} // name -> attachRequired
	for _, e := range h.Entries {
		if w := e.Write; w != nil && w.Kind == "CSIDriver" && !w.Removed {
			if d, ok := w.Object.(*storagev1.CSIDriver); ok {
				drivers[d.Name] = d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
			}
		}
	}
	for _, d := range h.End.CSIDrivers {
		drivers[d.Name] = d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
	}
	if len(drivers) == 0 {
		return false
	}
	for _, required := range drivers {
		if required {
			return false
		}
	}
	return true
}
