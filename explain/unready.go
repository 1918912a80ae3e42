package explain

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// podOnUnreadyNode: a scheduled pod, not being deleted, whose node is not
// Ready or gone. Its status is the kubelet's last word; the node
// lifecycle controller taints the node, the taint eviction controller
// deletes the pod once its toleration of the taint runs out, and the
// pod's volumes stay attached to the node until then and after.
func (w *walker) podOnUnreadyNode(p *corev1.Pod, f Finding) {
	ix := w.ix
	node := ix.nodes[p.Spec.NodeName]
	f.State = podState(p) + " (node not Ready)"
	status := string(p.Status.Phase)
	if status == "" {
		status = string(corev1.PodPending)
	}
	if node == nil {
		f.State = podState(p) + " (node gone)"
		f.Why = fmt.Sprintf("Its node %s no longer exists: the pod's status (%s) is what its kubelet last reported. "+
			"The pod garbage collector deletes pods bound to a node that is gone (after a 40 s quarantine); "+
			"its volumes stay attached to %s until the attach/detach controller detaches them.", p.Spec.NodeName, status, p.Spec.NodeName)
		w.add(f)
		return
	}
	ready, since := nodeReady(node)
	why := []string{fmt.Sprintf("Its node %s is not Ready (Ready=%s since %s): its kubelet stopped posting status, "+
		"so the pod's status (%s) is only what the kubelet last reported, and nothing on %s mounts or unmounts its volumes.",
		node.Name, ready, ix.ago(since), status, node.Name)}
	if ready == corev1.ConditionFalse {
		why[0] = fmt.Sprintf("Its node %s is not Ready (Ready=False since %s): its kubelet reports that the node cannot run pods, "+
			"so it starts no container and mounts no new volume there.", node.Name, ix.ago(since))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.Time.Before(since) {
			why = append(why, fmt.Sprintf("The node lifecycle controller marked the pod not Ready %s.", ix.ago(c.LastTransitionTime.Time)))
		}
	}
	why = append(why, fmt.Sprintf("Its volumes stay attached to %s: the attach/detach controller does not detach a volume a pod there still uses.", node.Name))
	eviction, due := w.eviction(p, node, ready)
	why = append(why, eviction)
	f.Why = strings.Join(why, " ")
	f.Due = due
	f.Next = fmt.Sprintf("Once deleted, the pod stays Terminating, as no kubelet on %s confirms that it stopped; its volumes are detached when it is gone "+
		"(force-deleted: the attach/detach controller then waits %s, maxWaitForUnmountDuration, for an unmount no kubelet reports). "+
		"If %s is down for good: taint it %s=nodeshutdown:NoExecute, and its pods are deleted and their volumes detached at once.",
		node.Name, roundDuration(maxWaitForUnmountDuration), node.Name, corev1.TaintNodeOutOfService)
	if hasTaint(node, corev1.TaintNodeOutOfService) {
		f.Next = fmt.Sprintf("Node %s has the %s taint: its pods are deleted and their volumes detached at once.", node.Name, corev1.TaintNodeOutOfService)
	}
	w.add(f)
	w.explain(Ref{Kind: KindNode, Name: node.Name})
}

// eviction says when the taint eviction controller deletes the pod from
// its not-Ready node, and returns that time (zero if never or unknown).
func (w *walker) eviction(p *corev1.Pod, node *corev1.Node, ready corev1.ConditionStatus) (string, time.Time) {
	ix := w.ix
	want := corev1.TaintNodeUnreachable
	if ready == corev1.ConditionFalse {
		want = corev1.TaintNodeNotReady
	}
	var due time.Time
	var because string
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		seconds, tolerated, forever := tolerationOf(p, t)
		added := time.Time{}
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		at := added
		switch {
		case forever:
			continue
		case tolerated:
			at = added.Add(time.Duration(seconds) * time.Second)
		}
		if due.IsZero() || at.Before(due) {
			due = at
			because = fmt.Sprintf("%s:NoExecute (added %s)", t.Key, ix.ago(added))
			if tolerated {
				because += fmt.Sprintf(", which the pod tolerates for %d s", seconds)
				if seconds == defaultTolerationSeconds && (t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady) {
					because += " (the DefaultTolerationSeconds admission plugin's default)"
				}
			} else {
				because += ", which the pod does not tolerate"
			}
		}
	}
	switch {
	case !due.IsZero() && due.After(ix.now):
		return fmt.Sprintf("The node has the taint %s: the taint eviction controller deletes the pod %s.", because, ix.in(due)), due
	case !due.IsZero():
		return fmt.Sprintf("The node has the taint %s: the taint eviction controller deletes the pod now (it was due %s).", because, ix.ago(due)), due
	case hasTaint(node, want):
		return "The pod tolerates the node's NoExecute taints for ever: it is not evicted.", time.Time{}
	}
	return fmt.Sprintf("The node lifecycle controller has not tainted the node %s:NoExecute yet; it does on its next monitor pass (every 5 s), "+
		"and the pod's toleration of the taint (300 s unless it says otherwise) runs from then.", want), time.Time{}
}

// defaultTolerationSeconds is how long the DefaultTolerationSeconds
// admission plugin lets a pod tolerate the not-ready and unreachable
// NoExecute taints (kubernetes plugin/pkg/admission/defaulttolerationseconds).
const defaultTolerationSeconds = 300

// tolerationOf is how the pod tolerates the taint: for seconds, for ever,
// or not at all (the shortest of its tolerations that match).
func tolerationOf(p *corev1.Pod, taint *corev1.Taint) (seconds int64, tolerated, forever bool) {
	for i := range p.Spec.Tolerations {
		tol := &p.Spec.Tolerations[i]
		if !tol.ToleratesTaint(klog.Background(), taint, false) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return 0, true, true
		}
		if !tolerated || *tol.TolerationSeconds < seconds {
			seconds, tolerated = max(*tol.TolerationSeconds, 0), true
		}
	}
	return seconds, tolerated, false
}
