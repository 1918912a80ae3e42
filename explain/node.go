package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// nodeReady is a node's Ready condition status and since when; Unknown
// for a node that is gone or has none.
func nodeReady(n *corev1.Node) (corev1.ConditionStatus, time.Time) {
	if n == nil {
		return corev1.ConditionUnknown, time.Time{}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status, c.LastTransitionTime.Time
		}
	}
	return corev1.ConditionUnknown, time.Time{}
}

// nodeDown says whether a node is not Ready, or gone from a snapshot
// that has nodes (one without any says nothing about them).
func (w *walker) nodeDown(name string) bool {
	n := w.ix.nodes[name]
	if n == nil {
		return len(w.ix.nodes) > 0
	}
	ready, _ := nodeReady(n)
	return ready != corev1.ConditionTrue
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// node explains a node as far as volumes care: Ready, taints, drivers.
func (w *walker) node(n *corev1.Node) {
	ix := w.ix
	ready, since := nodeReady(n)
	f := Finding{Object: Ref{Kind: KindNode, Name: n.Name}, State: fmt.Sprintf("Ready=%s since %s", ready, ix.ago(since))}
	var why []string
	if ready != corev1.ConditionTrue {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				f.Said = append(f.Said, Said{Component: "node-lifecycle-controller", Reason: "Ready=" + string(c.Status) + " " + c.Reason, Message: c.Message, Last: c.LastTransitionTime.Time})
			}
		}
		why = append(why, "The node is not Ready: its kubelet does not post status, so nothing there mounts or unmounts volumes, and its pods cannot be confirmed stopped.")
	}
	var taints []string
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key+":"+string(t.Effect))
	}
	if len(taints) > 0 {
		why = append(why, "Taints: "+strings.Join(taints, ", ")+".")
	}
	why = append(why, "Registered CSI drivers (CSINode): "+csiNodeDrivers(ix.csiNodes[n.Name])+".")
	var attached []string
	for _, va := range ix.vaList {
		if va.Spec.NodeName == n.Name && va.Status.Attached {
			attached = append(attached, va.Name)
		}
	}
	if len(attached) > 0 {
		why = append(why, "Attached: "+strings.Join(attached, ", ")+".")
	}
	f.Why = strings.Join(why, " ")
	if ready != corev1.ConditionTrue && !hasTaint(n, corev1.TaintNodeOutOfService) {
		f.Next = fmt.Sprintf("If the node is really down: taint it %s=nodeshutdown:NoExecute; its terminating pods are then deleted and its volumes detached at once.", corev1.TaintNodeOutOfService)
	}
	w.add(f)
}

// volumeAffinity: the PV can be used only on nodes its node affinity
// selects, and the pod cannot go there.
func (w *walker) volumeAffinity(pv *corev1.PersistentVolume, p *corev1.Pod) {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return
	}
	sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
	if err != nil {
		return
	}
	var match []string
	for _, n := range w.ix.nodes {
		if sel.Match(n) {
			match = append(match, n.Name)
		}
	}
	slices.Sort(match)
	where := "no node of the cluster"
	if len(match) > 0 {
		where = "only " + strings.Join(match, ", ")
	}
	w.add(Finding{Object: Ref{Kind: KindVolume, Name: pv.Name}, State: "node affinity " + describeSelector(pv.Spec.NodeAffinity.Required),
		Why:  fmt.Sprintf("The volume can be used on %s (its node affinity, set where it was provisioned), and pod %s's own node selection rules those out.", where, p.Name),
		Next: "Run the pod where the volume is (drop or change its node selector/affinity), or use a volume in the pod's topology."})
}

func describeSelector(s *corev1.NodeSelector) string {
	var terms []string
	for _, t := range s.NodeSelectorTerms {
		var exprs []string
		for _, e := range t.MatchExpressions {
			exprs = append(exprs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
		}
		terms = append(terms, strings.Join(exprs, " and "))
	}
	return strings.Join(terms, " or ")
}

// capacity: the scheduler found no node whose topology has room for the
// pod's new volumes (CSIStorageCapacity).
func (w *walker) capacity(p *corev1.Pod) {
	ix := w.ix
	for _, name := range podClaims(p) {
		claim := ix.claims[key(p.Namespace, name)]
		if claim == nil || claim.Spec.VolumeName != "" || claim.Spec.StorageClassName == nil {
			continue
		}
		class := *claim.Spec.StorageClassName
		want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		var have []string
		for _, c := range ix.capacities {
			if c.StorageClassName != class {
				continue
			}
			size := "unknown"
			if c.MaximumVolumeSize != nil {
				size = "max volume " + c.MaximumVolumeSize.String()
			} else if c.Capacity != nil {
				size = c.Capacity.String()
			}
			topo := "every node"
			if c.NodeTopology != nil {
				topo = metav1.FormatLabelSelector(c.NodeTopology)
			}
			have = append(have, fmt.Sprintf("%s in %s", size, topo))
		}
		slices.Sort(have)
		f := Finding{Object: Ref{Kind: KindClaim, Namespace: claim.Namespace, Name: claim.Name}, State: "Pending, needs " + want.String(),
			Why: fmt.Sprintf("The claim needs a new %s volume of class %s, and the driver's published capacity (CSIStorageCapacity) has room for it on no node the pod may use.",
				quantity(want), class)}
		if len(have) > 0 {
			f.Why += " Capacity published: " + strings.Join(have, "; ") + "."
		} else {
			f.Why += " No CSIStorageCapacity of the class is published."
		}
		f.Next = "Free space in the pool (delete volumes), add capacity, or ask for less; the external-provisioner refreshes the capacity objects on its poll (every minute)."
		w.add(f)
		w.seen[f.Object] = true
	}
}

func quantity(q resource.Quantity) string { return q.String() }

// volumeLimits: every node has as many volumes of the driver as its
// CSINode allows.
func (w *walker) volumeLimits(p *corev1.Pod) {
	ix := w.ix
	var limits []string
	for _, cn := range ix.csiNodes {
		for _, d := range cn.Spec.Drivers {
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				n := 0
				for _, va := range ix.vaList {
					if va.Spec.NodeName == cn.Name && va.Spec.Attacher == d.Name {
						n++
					}
				}
				limits = append(limits, fmt.Sprintf("%s: %d of %d of %s", cn.Name, n, *d.Allocatable.Count, d.Name))
			}
		}
	}
	slices.Sort(limits)
	f := Finding{Object: Ref{Kind: KindPod, Namespace: p.Namespace, Name: p.Name}, State: "over the nodes' volume limits",
		Why: "Each node's CSI driver allows a number of volumes (CSINode allocatable count); the nodes the pod may use have no room for its volumes."}
	if len(limits) > 0 {
		f.Why += " Attachments per node: " + strings.Join(limits, "; ") + "."
	}
	f.Next = "Move pods with volumes off a node, or add nodes."
	w.add(f)
}

// readWriteOncePodHolder: another pod already uses the ReadWriteOncePod
// claim.
func (w *walker) readWriteOncePodHolder(claim *corev1.PersistentVolumeClaim, p *corev1.Pod) {
	if !slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteOncePod) {
		return
	}
	for _, other := range w.ix.podList {
		if other.Namespace == claim.Namespace && other.Name != p.Name && other.Spec.NodeName != "" && !podFinished(other) && usesClaim(other, claim.Name) {
			w.add(Finding{Object: Ref{Kind: KindPod, Namespace: other.Namespace, Name: other.Name}, State: podState(other),
				Why:  fmt.Sprintf("It uses claim %s, whose access mode ReadWriteOncePod allows one pod only.", claim.Name),
				Next: fmt.Sprintf("Delete pod %s, or let %s wait for it to finish.", other.Name, p.Name)})
			return
		}
	}
}
