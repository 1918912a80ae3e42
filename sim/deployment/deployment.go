// Package deployment is the simulated Deployment controller of the
// kube-controller-manager (kubernetes pkg/controller/deployment): for
// each Deployment a ReplicaSet <deployment>-<pod-template-hash> per pod
// template, the RollingUpdate strategy (the new ReplicaSet scaled up
// within maxSurge, the old ones down within maxUnavailable) and Recreate
// (the old ones scaled to zero and their pods gone before the new one is
// made), the ScalingReplicaSet events, the revision annotations, and the
// status with its Available and Progressing conditions, including the
// progress deadline.
//
// Not modelled: scaling a Deployment proportionally during a rollout
// (isScalingEvent), pausing, rollback, adoption of ReplicaSets by label,
// revision history cleanup, minReadySeconds, the ReplicaFailure condition,
// status.terminatingReplicas.
package deployment

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

// The name the controller's events carry as their source.
const eventSource = "deployment-controller"

// Annotations, labels, reasons and messages of the real controller
// (kubernetes pkg/controller/deployment/util/deployment_util.go).
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"

	NewReplicaSetReason        = "NewReplicaSetCreated"
	FoundNewRSReason           = "FoundNewReplicaSet"
	ReplicaSetUpdatedReason    = "ReplicaSetUpdated"
	NewRSAvailableReason       = "NewReplicaSetAvailable"
	TimedOutReason             = "ProgressDeadlineExceeded"
	MinimumReplicasAvailable   = "MinimumReplicasAvailable"
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"

	scalingReplicaSetReason = "ScalingReplicaSet"
)

// annotationsToSkip are the deployment's annotations not copied to its
// ReplicaSets.
var annotationsToSkip = map[string]bool{
	corev1.LastAppliedConfigAnnotation:  true,
	RevisionAnnotation:                  true,
	RevisionHistoryAnnotation:           true,
	DesiredReplicasAnnotation:           true,
	MaxReplicasAnnotation:               true,
	"deprecated.deployment.rollback.to": true,
}

var (
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	rsKind         = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

// Controller is the Deployment controller.
type Controller struct {
	client      kubernetes.Interface
	deployments appslisters.DeploymentLister
	sets        appslisters.ReplicaSetLister
	pods        corelisters.PodLister
	queue       controller.Queue
	events      record.EventRecorder
	clock       clock.PassiveClock
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	c := &Controller{client: client, queue: rt.NewQueue("deployment"), clock: rt.Clock}
	c.events, _ = rt.NewEventRecorder(client, eventSource, "")
	d, rs, pods := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	c.deployments, c.sets, c.pods = d.Lister(), rs.Lister(), pods.Lister()
	_, _ = d.Informer().AddEventHandler(controller.EnqueueHandler(c.queue))
	_, _ = rs.Informer().AddEventHandler(controller.EnqueueControllerHandler(c.queue, deploymentKind, controller.Getter[*appsv1.Deployment](c.get).UID))
	// A Recreate deployment waits for its old pods to be gone.
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.podDeleted})
	return c
}

// get is the Deployment ns/name from the lister (controller.Getter).
func (c *Controller) get(ns, name string) (*appsv1.Deployment, error) {
	return c.deployments.Deployments(ns).Get(name)
}

// podDeleted queues a Recreate deployment whose pod went.
func (c *Controller) podDeleted(obj any) {
	pod, ok := controller.Unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := c.sets.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	dref := metav1.GetControllerOf(rs)
	if dref == nil {
		return
	}
	if d, err := c.deployments.Deployments(pod.Namespace).Get(dref.Name); err == nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		controller.EnqueueController(c.queue, pod.Namespace, dref, deploymentKind, controller.Getter[*appsv1.Deployment](c.get).UID)
	}
}

// Workers is the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "deployment", Queue: c.queue, Sync: c.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	cached, ok, err := controller.Getter[*appsv1.Deployment](c.get).Lookup(key)
	if !ok {
		return err
	}
	d := cached.DeepCopy()
	if sel := d.Spec.Selector; sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		c.events.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		return nil
	}
	rsList, err := c.ownedReplicaSets(d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := c.allReplicaSets(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return c.rolloutRecreate(ctx, d, rsList)
	}
	return c.rolloutRolling(ctx, d, rsList)
}

// ownedReplicaSets are the ReplicaSets the deployment controls, oldest
// first.
func (c *Controller) ownedReplicaSets(d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.sets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		if metav1.IsControlledBy(rs, d) {
			out = append(out, rs)
		}
	}
	sortByCreation(out)
	return out, nil
}

func sortByCreation(list []*appsv1.ReplicaSet) {
	slices.SortStableFunc(list, func(a, b *appsv1.ReplicaSet) int {
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

// equalIgnoreHash: two templates equal but for the pod-template-hash label.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// allReplicaSets finds the new ReplicaSet (of the deployment's template;
// made when create and missing) and the old ones, and syncs the revision
// (sync.go getAllReplicaSetsAndSyncRevision, getNewReplicaSet).
func (c *Controller) allReplicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	var existing *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range rsList { // oldest first: the oldest equal one is the new one
		if existing == nil && equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			existing = rs
			continue
		}
		old = append(old, rs)
	}
	maxOld := int64(0)
	for _, rs := range old {
		if v, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64); err == nil && v > maxOld {
			maxOld = v
		}
	}
	revision := strconv.FormatInt(maxOld+1, 10)
	if existing != nil {
		rs := existing.DeepCopy()
		if setNewRSAnnotations(d, rs, revision, true) || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			return updated, old, err
		}
		needsUpdate := setDeploymentRevision(d, rs.Annotations[RevisionAnnotation])
		if d.Spec.ProgressDeadlineSeconds != nil && condition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, FoundNewRSReason,
				fmt.Sprintf("Found new replica set %q", rs.Name)))
			needsUpdate = true
		}
		if needsUpdate {
			if _, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
				return nil, nil, err
			}
		}
		return rs, old, nil
	}
	if !create {
		return nil, old, nil
	}
	template := d.Spec.Template.DeepCopy()
	hash := PodTemplateHash(template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32), MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: *template},
	}
	replicas := newRSNewReplicas(d, append(slices.Clone(old), newRS), newRS)
	*newRS.Spec.Replicas = replicas
	setNewRSAnnotations(d, newRS, revision, false)
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newRS, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A hash collision, or a ReplicaSet the cache has not seen yet.
		existing, gerr := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, newRS.Name, metav1.GetOptions{})
		if gerr == nil && metav1.IsControlledBy(existing, d) && equalIgnoreHash(&existing.Spec.Template, &d.Spec.Template) {
			return existing, old, nil
		}
		count := int32(0)
		if d.Status.CollisionCount != nil {
			count = *d.Status.CollisionCount
		}
		count++
		d.Status.CollisionCount = &count
		if _, uerr := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); uerr != nil {
			return nil, nil, uerr
		}
		return nil, nil, err
	}
	if err != nil {
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if d.Spec.ProgressDeadlineSeconds != nil {
			setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ReplicaSetCreateError", msg))
			_, _ = c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		c.events.Event(d, corev1.EventTypeWarning, "ReplicaSetCreateError", msg)
		return nil, nil, err
	}
	if replicas > 0 {
		c.events.Eventf(d, corev1.EventTypeNormal, scalingReplicaSetReason, "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}
	setDeploymentRevision(d, revision)
	if d.Spec.ProgressDeadlineSeconds != nil {
		setCondition(&d.Status, c.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewReplicaSetReason,
			fmt.Sprintf("Created new replica set %q", created.Name)))
	}
	if _, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		return nil, nil, err
	}
	return created, old, nil
}

func withLabel(in map[string]string, key, value string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		out[k] = v
	}
	out[key] = value
	return out
}

// setNewRSAnnotations copies the deployment's annotations to the
// ReplicaSet and sets its revision and replica annotations; it says
// whether anything changed (deployment_util.go SetNewReplicaSetAnnotations).
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision string, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if annotationsToSkip[k] || rs.Annotations[k] == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	old := rs.Annotations[RevisionAnnotation]
	oldN, oldErr := strconv.ParseInt(old, 10, 64)
	newN, _ := strconv.ParseInt(revision, 10, 64)
	if old == "" || (oldErr == nil && oldN < newN) {
		rs.Annotations[RevisionAnnotation] = revision
		changed = true
	}
	if !exists && setReplicasAnnotations(rs, replicasOf(d), replicasOf(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

// setReplicasAnnotations sets desired- and max-replicas; true if changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, max int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(max))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation], rs.Annotations[MaxReplicasAnnotation] = d, m
	return true
}

// setDeploymentRevision sets the deployment's revision annotation.
func setDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == revision {
		return false
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// scaleReplicaSet sets a ReplicaSet's replicas (and replica annotations)
// and records the event (sync.go scaleReplicaSetAndRecordEvent).
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, scale int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if replicasOfRS(rs) == scale {
		return false, rs, nil
	}
	op := "down"
	if replicasOfRS(rs) < scale {
		op = "up"
	}
	from := replicasOfRS(rs)
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &scale
	setReplicasAnnotations(cp, replicasOf(d), replicasOf(d)+maxSurge(d))
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, err
	}
	c.events.Eventf(d, corev1.EventTypeNormal, scalingReplicaSetReason, "Scaled %s replica set %s from %d to %d", op, updated.Name, from, scale)
	return true, updated, nil
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func replicasOfRS(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// newCondition is a condition stamped now.
func (c *Controller) newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, msg string) appsv1.DeploymentCondition {
	now := metav1.NewTime(c.clock.Now())
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}

func condition(s appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// setCondition replaces the condition of its type, unless one of the same
// status and reason is there; a condition whose status stays keeps its
// transition time (deployment_util.go SetDeploymentCondition).
func setCondition(s *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition) {
	cur := condition(*s, cond.Type)
	if cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		return
	}
	if cur != nil && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(s, cond.Type)
	s.Conditions = append(s.Conditions, cond)
}

func removeCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	s.Conditions = slices.DeleteFunc(slices.Clone(s.Conditions), func(c appsv1.DeploymentCondition) bool { return c.Type == t })
}

// requeueAfter is how long until a stuck rollout's deadline, for
// requeueStuckDeployment.
func (c *Controller) requeueAfter(d *appsv1.Deployment, status appsv1.DeploymentStatus) time.Duration {
	cond := condition(status, appsv1.DeploymentProgressing)
	if d.Spec.ProgressDeadlineSeconds == nil || cond == nil || cond.Reason == NewRSAvailableReason || cond.Reason == TimedOutReason {
		return 0
	}
	if complete(d, &status) {
		return 0
	}
	after := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(c.clock.Now())
	if after < time.Second {
		return time.Second
	}
	return after
}
