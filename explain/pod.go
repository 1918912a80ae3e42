package explain

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Scheduler reasons (kubernetes pkg/scheduler/framework/plugins/
// volumebinding, nodevolumelimits): the parts of a FailedScheduling
// message that point at a volume.
const (
	schedVolumeNodeAffinity = "didn't match PersistentVolume's node affinity"
	schedNotEnoughStorage   = "did not have enough free storage"
	schedMaxVolumeCount     = "exceed max volume count"
	schedNoPVs              = "didn't find available persistent volumes to bind"
	schedRWOPConflict       = "PersistentVolumeClaim with ReadWriteOncePod access mode already in-use"
)

func (w *walker) pod(p *corev1.Pod) {
	ref := Ref{Kind: KindPod, Namespace: p.Namespace, Name: p.Name}
	f := Finding{Object: ref, State: podState(p)}
	switch {
	case p.DeletionTimestamp != nil:
		w.terminatingPod(p, f)
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		f.Why = "The pod has finished; its volumes are released as for a deleted pod."
		w.add(f)
	case p.Spec.NodeName == "":
		w.unscheduledPod(p, f)
	case w.nodeDown(p.Spec.NodeName):
		w.podOnUnreadyNode(p, f)
	case p.Status.Phase == corev1.PodRunning && allContainersRunning(p):
		f.Why = fmt.Sprintf("The pod runs on node %s: nothing is stuck.", p.Spec.NodeName)
		w.add(f)
	default:
		w.startingPod(p, f)
	}
}

// podState is what kubectl get pod would show, in short.
func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	state := string(p.Status.Phase)
	if state == "" {
		state = "Pending"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			return state + " (" + cs.State.Waiting.Reason + ")"
		}
	}
	if p.Spec.NodeName == "" {
		return state + ", not scheduled"
	}
	return state + " on node " + p.Spec.NodeName
}

func allContainersRunning(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// podClaims are the claims a pod's volumes name: its own and, for generic
// ephemeral volumes, <pod>-<volume>.
func podClaims(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, p.Name+"-"+v.Name)
		}
	}
	return out
}

func usesClaim(p *corev1.Pod, claim string) bool {
	for _, c := range podClaims(p) {
		if c == claim {
			return true
		}
	}
	return false
}

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// terminatingPod: deleted, and its kubelet has not confirmed the stop.
func (w *walker) terminatingPod(p *corev1.Pod, f Finding) {
	ix := w.ix
	// A pod's deletionTimestamp is when its grace period ends: the request
	// came that long before it.
	requested := p.DeletionTimestamp.Time
	if p.DeletionGracePeriodSeconds != nil {
		requested = requested.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
	}
	f.State = fmt.Sprintf("Terminating (deletion requested %s)", ix.ago(requested))
	if len(p.Finalizers) > 0 {
		f.Why = fmt.Sprintf("The pod is held by the finalizers %s: whoever set them must remove them.", strings.Join(p.Finalizers, ", "))
		w.add(f)
		return
	}
	if p.Spec.NodeName == "" {
		f.Why = "The pod was never scheduled; the API server removes it once its grace period ends."
		w.add(f)
		return
	}
	node := ix.nodes[p.Spec.NodeName]
	ready, since := nodeReady(node)
	switch {
	case node == nil:
		f.Why = fmt.Sprintf("Its node %s no longer exists, so no kubelet will confirm that the containers stopped. "+
			"The pod garbage collector deletes pods bound to a node that is gone (after a 40 s quarantine).", p.Spec.NodeName)
	case ready != corev1.ConditionTrue:
		f.Why = fmt.Sprintf("Its node %s is not Ready (Ready=%s since %s): no kubelet there confirms that the containers stopped, "+
			"so the pod stays Terminating, and keeps its volumes attached to %s.", node.Name, ready, ix.ago(since), node.Name)
		if hasTaint(node, corev1.TaintNodeOutOfService) {
			f.Next = fmt.Sprintf("Node %s has the %s taint: the pod garbage collector force-deletes its terminating pods.", node.Name, corev1.TaintNodeOutOfService)
		} else {
			f.Next = fmt.Sprintf("If %s is really down: kubectl delete pod %s --force, or taint the node %s=nodeshutdown:NoExecute "+
				"(the pod garbage collector then deletes its terminating pods, and the attach/detach controller detaches their volumes at once).",
				node.Name, p.Name, corev1.TaintNodeOutOfService)
		}
	default:
		grace := ""
		if p.DeletionGracePeriodSeconds != nil {
			grace = fmt.Sprintf(" (grace period %ds)", *p.DeletionGracePeriodSeconds)
		}
		f.Why = fmt.Sprintf("The kubelet on %s is stopping its containers and tearing down its volumes%s; it removes the pod when done.", node.Name, grace)
		w.quotePodEvents(p, &f, "FailedKillPod", "FailedUnmount", "FailedUnmapDevice", "FailedUnMount")
	}
	w.add(f)
}

// unscheduledPod: the scheduler has not placed it; its volumes may be why.
func (w *walker) unscheduledPod(p *corev1.Pod, f Finding) {
	ix := w.ix
	msg := ""
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			msg = c.Message
			f.Said = append(f.Said, Said{Component: "default-scheduler", Reason: "PodScheduled=False " + c.Reason, Message: c.Message, Last: c.LastTransitionTime.Time})
		}
	}
	if e := ix.latestEvent("Pod", p.Namespace, p.Name, p.UID, "FailedScheduling"); e != nil {
		if msg == "" {
			msg = e.Message
		}
		if len(f.Said) == 0 || e.Message != f.Said[0].Message {
			f.Said = append(f.Said, said(e))
		} else {
			f.Said[0].Count, f.Said[0].Reason, f.Said[0].Last = e.Count, e.Reason, e.Last
		}
	}
	if msg == "" {
		f.Why = "The scheduler has not placed the pod yet and has not said why."
		f.Next = "Is a scheduler running (spec.schedulerName " + schedulerName(p) + ")?"
	} else {
		f.Why = "The scheduler finds no node for the pod."
	}
	i := w.add(f)
	// The volume parts of the scheduler's message, and the claims the
	// scheduler waits for.
	for _, name := range podClaims(p) {
		claimRef := Ref{Kind: KindClaim, Namespace: p.Namespace, Name: name}
		claim := ix.claims[key(p.Namespace, name)]
		if claim == nil {
			w.add(Finding{Object: claimRef, State: "missing",
				Why:  fmt.Sprintf("Pod %s uses the claim, which does not exist; the scheduler waits for it.", p.Name),
				Next: fmt.Sprintf("Create the claim %s in namespace %s.", name, p.Namespace)})
			continue
		}
		if claim.Status.Phase != corev1.ClaimBound {
			// Room for a new volume is capacity's to explain, below.
			if !strings.Contains(msg, schedNotEnoughStorage) {
				w.explain(claimRef)
			}
			continue
		}
		pv := ix.volumes[claim.Spec.VolumeName]
		if pv == nil {
			continue
		}
		switch {
		case strings.Contains(msg, schedVolumeNodeAffinity):
			w.volumeAffinity(pv, p)
		case strings.Contains(msg, schedRWOPConflict):
			w.readWriteOncePodHolder(claim, p)
		}
	}
	switch {
	case strings.Contains(msg, schedNotEnoughStorage):
		w.capacity(p)
	case strings.Contains(msg, schedMaxVolumeCount):
		w.volumeLimits(p)
	}
	if msg != "" && len(w.findings) == i+1 {
		w.findings[i].Why += " Its volumes are not the reason; the scheduler's message says what is."
	}
}

func schedulerName(p *corev1.Pod) string {
	if p.Spec.SchedulerName == "" {
		return "default-scheduler"
	}
	return p.Spec.SchedulerName
}

// startingPod: scheduled, not yet running — usually waiting for volumes.
func (w *walker) startingPod(p *corev1.Pod, f Finding) {
	ix := w.ix
	f.Why = fmt.Sprintf("The pod is on node %s, waiting for its volumes to be attached and mounted before its containers start.", p.Spec.NodeName)
	w.quotePodEvents(p, &f, "FailedAttachVolume", "FailedMount", "FailedMapVolume")
	i := w.add(f)
	for _, name := range podClaims(p) {
		claimRef := Ref{Kind: KindClaim, Namespace: p.Namespace, Name: name}
		claim := ix.claims[key(p.Namespace, name)]
		if claim == nil {
			w.add(Finding{Object: claimRef, State: "missing", Why: "The pod uses the claim, which does not exist: the kubelet waits for it.",
				Next: fmt.Sprintf("Create the claim %s in namespace %s.", name, p.Namespace)})
			continue
		}
		if claim.Status.Phase != corev1.ClaimBound || claim.DeletionTimestamp != nil {
			w.explain(claimRef)
			continue
		}
		pv := ix.volumes[claim.Spec.VolumeName]
		if pv == nil {
			w.add(Finding{Object: Ref{Kind: KindVolume, Name: claim.Spec.VolumeName}, State: "missing",
				Why: fmt.Sprintf("Claim %s is bound to this volume, which does not exist.", name)})
			continue
		}
		if pv.Spec.CSI != nil {
			w.csiVolumeOnNode(p, pv.Spec.CSI.Driver, pv)
			w.callsInFlight(pv, p.Spec.NodeName)
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.CSI != nil {
			w.driverOnNode(p.Spec.NodeName, v.CSI.Driver, p)
		}
	}
	if len(w.findings) == i+1 {
		if len(w.findings[i].Said) == 0 {
			w.findings[i].Why = fmt.Sprintf("The pod is on node %s; its volumes show nothing in the way. The wait is elsewhere (image, sandbox, containers).", p.Spec.NodeName)
		}
	}
}

// quotePodEvents quotes the latest event of each reason about the pod.
func (w *walker) quotePodEvents(p *corev1.Pod, f *Finding, reasons ...string) {
	for _, r := range reasons {
		if e := w.ix.latestEvent("Pod", p.Namespace, p.Name, p.UID, r); e != nil {
			f.Said = append(f.Said, said(e))
		}
	}
}
