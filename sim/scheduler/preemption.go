package scheduler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Preemption, as the DefaultPreemption PostFilter plugin does it for what
// csisim models (kubernetes pkg/scheduler/framework/plugins/defaultpreemption
// and pkg/scheduler/framework/preemption): a pod that fits nowhere may
// preempt pods of lower priority on a node where their going would make
// it fit. Modelled: the NodeResourcesFit and VolumeRestrictions
// (ReadWriteOncePod) refusals; not modelled: PodDisruptionBudgets, volume
// limits freed by victims, and nominated pods in the victim selection
// (the filters count them: withNominated).

// The postscripts of a preemption that could not be tried, in the real
// evaluator's words (preemption.go, PodEligibleToPreemptOthers).
const (
	notEligibleNever       = "not eligible due to preemptionPolicy=Never."
	notEligibleTerminating = "not eligible due to a terminating pod on the nominated node."
)

// preemption is the outcome of a preemption attempt: the node nominated
// and the pods to evict there, or why none was found (the postscript).
type preemption struct {
	node    string
	victims []*corev1.Pod
	// postscript ends the FailedScheduling message: why no node was
	// nominated, or which was.
	postscript string
}

// preempt looks for a node where evicting pods of lower priority lets pod
// fit. verdicts are the nodes' filter verdicts, by node name.
func (s *Scheduler) preempt(pod *corev1.Pod, vols podVolumes, nodes []*corev1.Node, verdicts map[string]verdict) preemption {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return preemption{postscript: notEligibleNever}
	}
	priority := corev1helpers.PodPriority(pod)
	// A pod already nominated waits for the pods of lower priority still
	// terminating there rather than preempting again.
	if nominated := pod.Status.NominatedNodeName; nominated != "" {
		if v, ok := verdicts[nominated]; ok && v.preemptible {
			for _, p := range s.runningOn(nominated) {
				if corev1helpers.PodPriority(p) < priority && terminatingByPreemption(p) {
					return preemption{postscript: notEligibleTerminating}
				}
			}
		}
	}
	type candidate struct {
		node    string
		victims []*corev1.Pod
	}
	var candidates []candidate
	postscript := map[string]int{}
	for _, node := range nodes {
		v := verdicts[node.Name]
		if !v.preemptible {
			postscript["Preemption is not helpful for scheduling"]++
			continue
		}
		victims, ok := s.victimsOn(pod, node, vols)
		if !ok {
			postscript["No preemption victims found for incoming pod"]++
			continue
		}
		candidates = append(candidates, candidate{node: node.Name, victims: victims})
	}
	if len(candidates) == 0 {
		return preemption{postscript: fmt.Sprintf("preemption: 0/%d nodes are available: %s.", len(nodes), histogram(postscript))}
	}
	// The real pickOneNodeForPreemption: the node whose most important
	// victim has the lowest priority, then the lowest sum of priorities,
	// then the fewest victims, then the latest start of the most
	// important victims; then the first (here: by name).
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i].victims, candidates[j].victims
		if x, y := corev1helpers.PodPriority(a[0]), corev1helpers.PodPriority(b[0]); x != y {
			return x < y
		}
		if x, y := prioritySum(a), prioritySum(b); x != y {
			return x < y
		}
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return startTime(a[0]).After(startTime(b[0]))
	})
	best := candidates[0]
	// v1.37's Evaluator.Preempt says where it preempts
	// (pkg/scheduler/framework/preemption/preemption.go), behind
	// DefaultPreemption's "preemption: ".
	return preemption{node: best.node, victims: best.victims,
		postscript: fmt.Sprintf("preemption: found a potential placement for pod on node %v, preempting %d victims", best.node, len(best.victims))}
}

// victimsOn is SelectVictimsOnNode: take away every pod of lower priority
// on the node; if the pod then fits, give back as many as can stay, the
// most important first; the others are the victims (most important
// first). ok is false if the pod does not fit even with all of them gone,
// or no pod needs to go.
func (s *Scheduler) victimsOn(pod *corev1.Pod, node *corev1.Node, vols podVolumes) ([]*corev1.Pod, bool) {
	priority := corev1helpers.PodPriority(pod)
	var running, lower []*corev1.Pod
	for _, p := range s.runningOn(node.Name) {
		if corev1helpers.PodPriority(p) < priority {
			lower = append(lower, p)
		} else {
			running = append(running, p)
		}
	}
	if len(lower) == 0 {
		return nil, false
	}
	gone := map[*corev1.Pod]bool{}
	for _, p := range lower {
		gone[p] = true
	}
	sn := s.snapshot()
	try := func() bool {
		v := vols
		v.readWriteOncePodUsers = nil
		for _, u := range vols.readWriteOncePodUsers {
			if !gone[u] {
				v.readWriteOncePodUsers = append(v.readWriteOncePodUsers, u)
			}
		}
		v.readWriteOncePodInUse = len(v.readWriteOncePodUsers) > 0
		var on []*corev1.Pod
		on = append(on, running...)
		for _, p := range lower {
			if !gone[p] {
				on = append(on, p)
			}
		}
		// Volume limits are not given back by victims here.
		return fitsAll(pod, node, on, v, func(*corev1.Node) bool { return false }, newAcrossNodes(pod, sn.without(gone))).fits()
	}
	if !try() {
		return nil, false
	}
	sort.SliceStable(lower, func(i, j int) bool { return moreImportant(lower[i], lower[j]) })
	var victims []*corev1.Pod
	for _, p := range lower {
		delete(gone, p)
		if !try() {
			gone[p] = true
			victims = append(victims, p)
		}
	}
	return victims, len(victims) > 0
}

// terminatingByPreemption: the pod is being deleted after a preemption (the
// real PodTerminatingByPreemption: its DisruptionTarget condition says so).
func terminatingByPreemption(p *corev1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// moreImportant is the real MoreImportantPod: higher priority, then
// started earlier.
func moreImportant(a, b *corev1.Pod) bool {
	if x, y := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b); x != y {
		return x > y
	}
	return startTime(a).Before(startTime(b))
}

func startTime(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// prioritySum is the real evaluator's sum of the victims' priorities, each
// shifted to be positive.
func prioritySum(victims []*corev1.Pod) int64 {
	var sum int64
	for _, p := range victims {
		sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32) + 1
	}
	return sum
}

// evict is the real executor's PreemptPod for each victim: the
// DisruptionTarget condition (reason PreemptionByScheduler), the deletion
// with the pod's grace period, and the Preempted event naming the
// preemptor by UID.
func (s *Scheduler) evict(ctx context.Context, preemptor *corev1.Pod, node string, victims []*corev1.Pod) error {
	for _, victim := range victims {
		if victim.DeletionTimestamp != nil {
			continue // already going
		}
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason:             corev1.PodReasonPreemptionByScheduler,
			Message:            fmt.Sprintf("%s: preempting to accommodate a higher priority pod", schedulerName(preemptor)),
			ObservedGeneration: victim.Generation, LastTransitionTime: metav1.NewTime(s.clock.Now()).Rfc3339Copy()}
		v := victim.DeepCopy()
		setCondition(v, cond)
		if _, err := s.client.CoreV1().Pods(v.Namespace).UpdateStatus(ctx, v, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("adding DisruptionTarget to victim %s/%s: %w", v.Namespace, v.Name, err)
		}
		if err := s.client.CoreV1().Pods(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("preempting pod %s/%s: %w", v.Namespace, v.Name, err)
		}
		s.events.Eventf(victim, corev1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", preemptor.UID, node)
	}
	return nil
}

func schedulerName(pod *corev1.Pod) string {
	if pod.Spec.SchedulerName != "" {
		return pod.Spec.SchedulerName
	}
	return Name
}

// setNominated records the node a pod preempted on (status.nominatedNodeName),
// with the PodScheduled=False condition of the failed attempt.
func (s *Scheduler) setNominated(ctx context.Context, pod *corev1.Pod, msg, node string) error {
	p := pod.DeepCopy()
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: msg, LastTransitionTime: metav1.NewTime(s.clock.Now()).Rfc3339Copy()}
	if hasCondition(p, cond) && p.Status.NominatedNodeName == node {
		return nil
	}
	if !hasCondition(p, cond) {
		setCondition(p, cond)
	}
	p.Status.NominatedNodeName = node
	if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("nominating node %s for pod %s/%s: %w", node, pod.Namespace, pod.Name, err)
	}
	return nil
}

// allNodes are the nodes by name.
func (s *Scheduler) allNodes() []*corev1.Node {
	nodes, _ := s.nodes.List(labels.Everything())
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes
}
