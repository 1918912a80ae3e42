package daemonset

// The rolling update without surge: old pods go, at most maxUnavailable
// of the nodes' pods unavailable at a time, and manage makes their
// replacements (kubernetes pkg/controller/daemon/update.go rollingUpdate,
// updatedDesiredNodeCounts, findUpdatedPodsOnNode).

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// rollingUpdate deletes the old pods it may: every old pod that is not
// available, and available ones while fewer than maxUnavailable nodes
// are without an available pod.
func (c *Controller) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := c.podsByNode(ds)
	if err != nil {
		return err
	}
	desired := 0
	var order []string // the nodes with pods or wanting one, in the node list's order
	for _, node := range nodes {
		run, _ := shouldRun(node, ds)
		if run {
			desired++
		}
		if _, ok := byNode[node.Name]; ok || run {
			order = append(order, node.Name)
		}
	}
	maxUnavailable, err := maxUnavailableOf(ds, desired)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	available := func(p *corev1.Pod) bool { return isReady(p) && availableIn(p, ds.Spec.MinReadySeconds, now) <= 0 }
	unavailable := 0
	var replace, candidates []*corev1.Pod
	for _, node := range order {
		newPod, oldPod, ok := updatedPodsOn(ds, byNode[node], hash)
		switch {
		case !ok, oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
			unavailable++ // manage sets this node right
		case newPod != nil:
			if !available(newPod) {
				unavailable++
			}
		case !available(oldPod):
			replace = append(replace, oldPod)
		case unavailable < maxUnavailable:
			candidates = append(candidates, oldPod)
		}
	}
	room := min(max(maxUnavailable-unavailable, 0), len(candidates))
	return c.syncNodes(ctx, ds, append(replace, candidates[:room]...), nil, hash)
}

// maxUnavailableOf is the rolling update's maxUnavailable over desired
// nodes, rounded up; at least one, as surge is not modelled.
func maxUnavailableOf(ds *appsv1.DaemonSet, desired int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	n := 1
	if r != nil && r.MaxUnavailable != nil {
		v, err := intstr.GetScaledValueFromIntOrPercent(r.MaxUnavailable, desired, true)
		if err != nil {
			return 0, fmt.Errorf("invalid value for MaxUnavailable: %w", err)
		}
		n = v
	}
	return max(n, 1), nil
}

// updatedPodsOn finds the node's one pod of the current revision and one
// older, leaving out those being deleted; not ok when it has two of
// either.
func updatedPodsOn(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		slot := &oldPod
		if isUpdated(ds, p, hash) {
			slot = &newPod
		}
		if *slot != nil {
			return nil, nil, false
		}
		*slot = p
	}
	return newPod, oldPod, true
}
