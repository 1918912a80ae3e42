package daemonset

// The DaemonSet's status and the order of its pods (kubernetes
// pkg/controller/daemon/daemon_controller.go updateDaemonSetStatus,
// storeDaemonSetStatus, podByCreationTimestampAndPhase; util IsPodUpdated).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// updateStatus counts, over the nodes, those that should run a pod
// (desired), run one (current), run one they should not (misscheduled),
// and of the oldest pod on each wanted node whether it is ready,
// available, and of the current revision; it writes them with the
// observed generation when anything changed.
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := c.podsByNode(ds)
	if err != nil {
		return err
	}
	var st appsv1.DaemonSetStatus
	now := c.clock.Now()
	requeue := time.Duration(0)
	for _, node := range nodes {
		run, _ := shouldRun(node, ds)
		pods := byNode[node.Name]
		if !run {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		sorted := slices.Clone(pods)
		sortOldestFirst(sorted)
		pod := sorted[0]
		if isReady(pod) {
			st.NumberReady++
			if wait := availableIn(pod, ds.Spec.MinReadySeconds, now); wait <= 0 {
				st.NumberAvailable++
			} else if requeue == 0 || wait < requeue {
				requeue = wait
			}
		}
		if isUpdated(ds, pod, hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	st.ObservedGeneration = ds.Generation
	if requeue > 0 {
		// The real controller resyncs after minReadySeconds when some
		// ready pods are not available yet.
		c.queue.AddAfter(ds.Namespace+"/"+ds.Name, requeue)
	}
	old := ds.Status
	st.CollisionCount, st.Conditions = old.CollisionCount, old.Conditions
	if old.DesiredNumberScheduled == st.DesiredNumberScheduled && old.CurrentNumberScheduled == st.CurrentNumberScheduled &&
		old.NumberMisscheduled == st.NumberMisscheduled && old.NumberReady == st.NumberReady &&
		old.UpdatedNumberScheduled == st.UpdatedNumberScheduled && old.NumberAvailable == st.NumberAvailable &&
		old.NumberUnavailable == st.NumberUnavailable && old.ObservedGeneration >= ds.Generation {
		return nil
	}
	ds.Status = st
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}

// isUpdated: the pod is of the current revision, by its hash or its
// template generation (IsPodUpdated).
func isUpdated(ds *appsv1.DaemonSet, pod *corev1.Pod, hash string) bool {
	if gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok && pod.Labels[templateGenerationLabel] == gen {
		return true
	}
	return hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}

// isReady: the pod's Ready condition is True.
func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// availableIn is how long until a ready pod has been ready for
// minReadySeconds (podutil.IsPodAvailable); zero or less: available.
func availableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds == 0 {
		return 0
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
		}
	}
	return time.Duration(minReadySeconds) * time.Second
}

// sortOldestFirst orders pods scheduled first, then oldest, then by name
// (podByCreationTimestampAndPhase).
func sortOldestFirst(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
			if a.Spec.NodeName != "" {
				return -1
			}
			return 1
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// sortPods orders pods by name, for a deterministic order of deletions
// (the real controller deletes them concurrently).
func sortPods(pods []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
}
