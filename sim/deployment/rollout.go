package deployment

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/csisim/csisim/sim/controller"
)

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against the replicas; both zero makes maxUnavailable 1
// (deployment_util.go ResolveFenceposts).
func fenceposts(d *appsv1.Deployment) (int32, int32) {
	ru := d.Spec.Strategy.RollingUpdate
	surgeV, unavailV := intstr.FromString("25%"), intstr.FromString("25%")
	if ru != nil && ru.MaxSurge != nil {
		surgeV = *ru.MaxSurge
	}
	if ru != nil && ru.MaxUnavailable != nil {
		unavailV = *ru.MaxUnavailable
	}
	desired := int(replicasOf(d))
	surge, err := intstr.GetScaledValueFromIntOrPercent(&surgeV, desired, true)
	if err != nil {
		surge = 0
	}
	unavail, err := intstr.GetScaledValueFromIntOrPercent(&unavailV, desired, false)
	if err != nil {
		unavail = 0
	}
	if surge == 0 && unavail == 0 {
		unavail = 1
	}
	return int32(surge), int32(unavail)
}

func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

func maxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, _ := fenceposts(d)
	return s
}

func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || replicasOf(d) == 0 {
		return 0
	}
	_, u := fenceposts(d)
	if u > replicasOf(d) {
		return replicasOf(d)
	}
	return u
}

func sumReplicas(list []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range list {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

func specReplicas(rs *appsv1.ReplicaSet) int32      { return replicasOfRS(rs) }
func statusReplicas(rs *appsv1.ReplicaSet) int32    { return rs.Status.Replicas }
func readyReplicas(rs *appsv1.ReplicaSet) int32     { return rs.Status.ReadyReplicas }
func availableReplicas(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas }

// newRSNewReplicas is how many replicas the new ReplicaSet may have now
// (deployment_util.go NewRSNewReplicas).
func newRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRolling(d) {
		return replicasOf(d)
	}
	current := sumReplicas(all, specReplicas)
	maxTotal := replicasOf(d) + maxSurge(d)
	if current >= maxTotal {
		return replicasOfRS(newRS)
	}
	up := min(maxTotal-current, replicasOf(d)-replicasOfRS(newRS))
	return replicasOfRS(newRS) + up
}

func active(list []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range list {
		if rs != nil && replicasOfRS(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// rolloutRolling is one step of a rolling update (rolling.go).
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.allReplicaSets(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(oldRSs, newRS)
	if scaled, err := c.reconcileNewReplicaSet(ctx, all, newRS, d); err != nil {
		return err
	} else if scaled {
		return c.syncStatus(ctx, all, newRS, d)
	}
	if scaled, err := c.reconcileOldReplicaSets(ctx, all, active(oldRSs), newRS, d); err != nil {
		return err
	} else if scaled {
		return c.syncStatus(ctx, all, newRS, d)
	}
	return c.syncStatus(ctx, all, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch {
	case replicasOfRS(newRS) == replicasOf(d):
		return false, nil
	case replicasOfRS(newRS) > replicasOf(d):
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, replicasOf(d), d)
		return scaled, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, newRSNewReplicas(d, all, newRS), d)
	return scaled, err
}

// reconcileOldReplicaSets scales old ReplicaSets down as far as
// maxUnavailable allows, unhealthy replicas first.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, all, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sumReplicas(oldRSs, specReplicas) == 0 {
		return false, nil
	}
	minAvailable := replicasOf(d) - maxUnavailable(d)
	newUnavailable := replicasOfRS(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := sumReplicas(all, specReplicas) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	// Clean up unhealthy replicas first.
	sortByCreation(oldRSs)
	var cleaned int32
	for i, rs := range oldRSs {
		if cleaned >= maxScaledDown {
			break
		}
		if replicasOfRS(rs) == 0 || replicasOfRS(rs) == rs.Status.AvailableReplicas {
			continue
		}
		down := min(maxScaledDown-cleaned, replicasOfRS(rs)-rs.Status.AvailableReplicas)
		_, updated, err := c.scaleReplicaSet(ctx, rs, replicasOfRS(rs)-down, d)
		if err != nil {
			return false, err
		}
		oldRSs[i] = updated
		cleaned += down
	}
	// Then scale down within maxUnavailable.
	all = append(append([]*appsv1.ReplicaSet{}, oldRSs...), newRS)
	availableCount := sumReplicas(all, availableReplicas)
	var scaledDown int32
	if availableCount > minAvailable {
		total := availableCount - minAvailable
		for _, rs := range oldRSs {
			if scaledDown >= total {
				break
			}
			if replicasOfRS(rs) == 0 {
				continue
			}
			down := min(replicasOfRS(rs), total-scaledDown)
			if _, _, err := c.scaleReplicaSet(ctx, rs, replicasOfRS(rs)-down, d); err != nil {
				return false, err
			}
			scaledDown += down
		}
	}
	return cleaned+scaledDown > 0, nil
}

// rolloutRecreate scales the old ReplicaSets to zero, waits for their pods
// to be gone, then makes and scales up the new one (recreate.go).
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := c.allReplicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(oldRSs, newRS)
	scaled := false
	for _, rs := range active(oldRSs) {
		ok, _, err := c.scaleReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaled = scaled || ok
	}
	if scaled {
		return c.syncStatus(ctx, all, newRS, d)
	}
	running, err := c.oldPodsRunning(newRS, oldRSs)
	if err != nil {
		return err
	}
	if running {
		return c.syncStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, oldRSs, err = c.allReplicaSets(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(oldRSs, newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, replicasOf(d), d); err != nil {
		return err
	}
	return c.syncStatus(ctx, all, newRS, d)
}

// oldPodsRunning: an old ReplicaSet still counts pods, or one of its pods
// has not finished (a terminating pod counts).
func (c *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (bool, error) {
	if sumReplicas(oldRSs, statusReplicas) > 0 {
		return true, nil
	}
	if len(oldRSs) == 0 {
		return false, nil
	}
	pods, err := c.pods.Pods(oldRSs[0].Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || (newRS != nil && ref.UID == newRS.UID) {
			continue
		}
		for _, rs := range oldRSs {
			if ref.UID == rs.UID && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return true, nil
			}
		}
	}
	return false, nil
}

// calculateStatus is the deployment's status from its ReplicaSets, with
// the Available condition (sync.go calculateStatus).
func (c *Controller) calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := sumReplicas(all, availableReplicas)
	unavailable := max(sumReplicas(all, specReplicas)-available, 0)
	var updated int32
	if newRS != nil {
		updated = newRS.Status.Replicas
	}
	s := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumReplicas(all, statusReplicas),
		UpdatedReplicas:     updated,
		ReadyReplicas:       sumReplicas(all, readyReplicas),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
	}
	s.Conditions = append(s.Conditions, d.Status.Conditions...)
	if available >= replicasOf(d)-maxUnavailable(d) {
		setCondition(&s, c.newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability."))
	} else {
		setCondition(&s, c.newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability."))
	}
	return s
}

// complete: every replica updated and available (DeploymentComplete).
func complete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	r := replicasOf(d)
	return s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r && s.ObservedGeneration >= d.Generation
}

// progressing: more replicas updated, ready or available than before, or
// fewer old ones (DeploymentProgressing).
func progressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	o := d.Status
	return s.UpdatedReplicas > o.UpdatedReplicas || s.Replicas-s.UpdatedReplicas < o.Replicas-o.UpdatedReplicas ||
		s.ReadyReplicas > o.ReadyReplicas || s.AvailableReplicas > o.AvailableReplicas
}

// timedOut: the Progressing condition was last updated longer ago than
// the progress deadline (DeploymentTimedOut).
func (c *Controller) timedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	cond := condition(*s, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason == NewRSAvailableReason {
		return false
	}
	if cond.Reason == TimedOutReason {
		return true
	}
	deadline := cond.LastUpdateTime.Add(secondsOf(*d.Spec.ProgressDeadlineSeconds))
	return deadline.Before(c.clock.Now())
}

// syncStatus writes the status with the Progressing condition when it
// changed, and requeues a rollout that is not done by its deadline
// (progress.go syncRolloutStatus; syncStatusOnly for a deployment being
// deleted).
func (c *Controller) syncStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	var nonNil []*appsv1.ReplicaSet
	for _, rs := range all {
		if rs != nil {
			nonNil = append(nonNil, rs)
		}
	}
	s := c.calculateStatus(nonNil, newRS, d)
	if d.Spec.ProgressDeadlineSeconds == nil {
		removeCondition(&s, appsv1.DeploymentProgressing)
	}
	cur := condition(d.Status, appsv1.DeploymentProgressing)
	done := s.Replicas == s.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if d.Spec.ProgressDeadlineSeconds != nil && !done {
		name := func(what string) string {
			if newRS != nil {
				return fmt.Sprintf("ReplicaSet %q %s", newRS.Name, what)
			}
			return fmt.Sprintf("Deployment %q %s", d.Name, what)
		}
		switch {
		case complete(d, &s):
			setCondition(&s, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSAvailableReason, name("has successfully progressed.")))
		case progressing(d, &s):
			cond := c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReplicaSetUpdatedReason, name("is progressing."))
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&s, appsv1.DeploymentProgressing)
			}
			setCondition(&s, cond)
		case c.timedOut(d, &s):
			setCondition(&s, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, TimedOutReason, name("has timed out progressing.")))
		}
	}
	if apiequality.Semantic.DeepEqual(d.Status, s) {
		if after := c.requeueAfter(d, s); after > 0 {
			return controller.RequeueAfter(after)
		}
		return nil
	}
	d.Status = s
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return errors.Join(err)
}
