// Package statefulset is the simulated StatefulSet controller of the
// kube-controller-manager (kubernetes pkg/controller/statefulset): each
// set's pods <set>-<ordinal>, made with their claims <template>-<set>-<ordinal>
// from the volumeClaimTemplates, one at a time in order (OrderedReady:
// the next only once the previous is Running and Ready) or all at once
// (Parallel); a missing pod made again on its existing claims; scale down
// from the highest ordinal; the claims' owner references as the
// persistentVolumeClaimRetentionPolicy wants them, so that the garbage
// collector deletes them with the set or with a scaled-down pod; the set's
// ControllerRevision and status.
//
// Not modelled: rolling updates of a changed template (pods are made from
// the set's current template and labelled with its revision; existing pods
// are not replaced, as with the OnDelete strategy), revision history
// truncation, minReadySeconds, adoption and release of pods by label.
package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/csisim/csisim/sim/controller"
)

// The name the controller's events carry as their source
// (kube-controller-manager's statefulset controller).
const eventSource = "statefulset-controller"

// Controller is the StatefulSet controller.
type Controller struct {
	client    kubernetes.Interface
	sets      appslisters.StatefulSetLister
	pods      corelisters.PodLister
	claims    corelisters.PersistentVolumeClaimLister
	revisions appslisters.ControllerRevisionLister
	queue     controller.Queue
	events    record.EventRecorder
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	c := &Controller{client: client, queue: rt.NewQueue("statefulset")}
	c.events, _ = rt.NewEventRecorder(client, eventSource, "")
	sets := factory.Apps().V1().StatefulSets()
	pods := factory.Core().V1().Pods()
	c.sets, c.pods = sets.Lister(), pods.Lister()
	c.claims = factory.Core().V1().PersistentVolumeClaims().Lister()
	c.revisions = factory.Apps().V1().ControllerRevisions().Lister()
	_, _ = sets.Informer().AddEventHandler(controller.EnqueueHandler(c.queue))
	_, _ = pods.Informer().AddEventHandler(controller.EnqueueControllerHandler(c.queue, setKind, controller.Getter[*appsv1.StatefulSet](c.get).UID))
	return c
}

// get is the StatefulSet ns/name from the lister (controller.Getter).
func (c *Controller) get(ns, name string) (*appsv1.StatefulSet, error) {
	return c.sets.StatefulSets(ns).Get(name)
}

// Workers is the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "statefulset", Queue: c.queue, Sync: c.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	cached, ok, err := controller.Getter[*appsv1.StatefulSet](c.get).Lookup(key)
	if !ok {
		return err
	}
	set := cached.DeepCopy()
	pods, err := c.ownedPods(set)
	if err != nil {
		return err
	}
	revision, collisions, err := c.revision(ctx, set)
	if err != nil {
		return err
	}
	status := appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, CurrentRevision: revision.Name,
		UpdateRevision: revision.Name, CollisionCount: &collisions}
	countReplicas(&status, pods, revision.Name)
	var syncErr error
	if set.DeletionTimestamp == nil {
		syncErr = c.syncPods(ctx, set, pods, revision.Name)
	}
	return errors.Join(syncErr, c.updateStatus(ctx, set, status))
}

// ownedPods are the pods the set controls, sorted by name.
func (c *Controller) ownedPods(set *appsv1.StatefulSet) ([]*corev1.Pod, error) {
	all, err := c.pods.Pods(set.Namespace).List(labelsEverything())
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == set.UID {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return ordinalOf(a) - ordinalOf(b) })
	return out, nil
}

// revision finds or makes the set's ControllerRevision of its current
// template (stateful_set_control.go getStatefulSetRevisions): an equal
// revision is reused, numbered anew if it is not the latest; a name taken
// by another revision moves the collision count on.
func (c *Controller) revision(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.ControllerRevision, int32, error) {
	all, err := c.revisions.ControllerRevisions(set.Namespace).List(labelsEverything())
	if err != nil {
		return nil, 0, err
	}
	var owned []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOf(r); ref != nil && ref.UID == set.UID {
			owned = append(owned, r)
		}
	}
	slices.SortFunc(owned, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return int(a.Revision - b.Revision)
		}
		return cmpString(a.Name, b.Name)
	})
	next := int64(1)
	if len(owned) > 0 {
		next = owned[len(owned)-1].Revision + 1
	}
	collisions := int32(0)
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	want, err := newRevision(set, next, collisions)
	if err != nil {
		return nil, collisions, err
	}
	for i, r := range owned {
		if string(r.Data.Raw) != string(want.Data.Raw) {
			continue
		}
		if i == len(owned)-1 {
			return r, collisions, nil
		}
		upd := r.DeepCopy()
		upd.Revision = next
		got, err := c.client.AppsV1().ControllerRevisions(set.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
		return got, collisions, err
	}
	for {
		got, err := c.client.AppsV1().ControllerRevisions(set.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			return got, collisions, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, collisions, err
		}
		existing, gerr := c.client.AppsV1().ControllerRevisions(set.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, collisions, gerr
		}
		if metav1.IsControlledBy(existing, set) && string(existing.Data.Raw) == string(want.Data.Raw) {
			return existing, collisions, nil
		}
		collisions++
		if want, err = newRevision(set, next, collisions); err != nil {
			return nil, collisions, err
		}
	}
}

// syncPods makes, mends and removes the set's pods
// (stateful_set_control.go updateStatefulSet): first each wanted ordinal
// in order, then the claims of pods beyond the replicas, then those pods
// from the highest ordinal down. OrderedReady stops at the first pod that
// is being made, is not Running and Ready, or is terminating; Parallel
// goes on.
func (c *Controller) syncPods(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revision string) error {
	start, n := startOrdinal(set), replicasOf(set)
	replicas := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range pods {
		if inRange(p, set) {
			replicas[ordinalOf(p)-start] = p
		} else if ordinalOf(p) >= 0 {
			condemned = append(condemned, p)
		}
	}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = newPod(set, start+i, revision)
		}
	}
	slices.Reverse(condemned) // highest ordinal first
	var firstUnhealthy *corev1.Pod
	for _, p := range append(slices.Clone(replicas), condemned...) {
		if !isHealthy(p) {
			firstUnhealthy = p
			break
		}
	}
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	var errs []error
	for _, p := range replicas {
		stop, err := c.processReplica(ctx, set, monotonic, p)
		if err != nil {
			errs = append(errs, err)
		}
		if (stop || err != nil) && monotonic {
			return errors.Join(errs...)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, p := range condemned {
		if err := c.fixClaimOwners(ctx, set, p); err != nil {
			errs = append(errs, err)
			if monotonic {
				return errors.Join(errs...)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, p := range condemned {
		if isTerminating(p) {
			if monotonic {
				return nil
			}
			continue
		}
		if !isRunningAndReady(p) && monotonic && p != firstUnhealthy {
			return nil
		}
		err := c.deletePod(ctx, set, p)
		if err != nil {
			errs = append(errs, err)
		}
		if monotonic {
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

// processReplica brings one wanted ordinal along and says whether an
// ordered set must stop there.
func (c *Controller) processReplica(ctx context.Context, set *appsv1.StatefulSet, monotonic bool, pod *corev1.Pod) (bool, error) {
	// A pod that has finished is deleted; the next sync makes it again.
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		if pod.DeletionTimestamp == nil {
			if err := c.deletePod(ctx, set, pod); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if !isCreated(pod) {
		if stale, err := c.claimIsStale(set, pod); err != nil || stale {
			return true, err
		}
		if err := c.createPod(ctx, set, pod); err != nil {
			return true, err
		}
		if monotonic {
			return true, nil
		}
	}
	if pod.Status.Phase == corev1.PodPending {
		if err := c.createClaims(ctx, set, pod); err != nil {
			return true, err
		}
		if err := c.fixClaimOwners(ctx, set, pod); err != nil {
			c.podEvent("update", set, pod, err)
			return true, err
		}
	}
	if isTerminating(pod) && monotonic {
		return true, nil
	}
	if !isRunningAndReady(pod) && monotonic {
		return true, nil
	}
	match, err := c.claimOwnersMatch(set, pod)
	if err != nil {
		return true, err
	}
	if identityMatches(set, pod) && storageMatches(set, pod) && match {
		return false, nil
	}
	return false, c.updatePod(ctx, set, pod.DeepCopy())
}

// createPod makes the pod's claims, then the pod (stateful_pod_control.go
// CreateStatefulPod).
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := c.createClaims(ctx, set, pod); err != nil {
		c.podEvent("create", set, pod, err)
		return err
	}
	_, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return err
	}
	if err == nil {
		// The claims just made are not in the cache yet: this finds
		// nothing to do until a later sync, as on the real controller.
		if ferr := c.fixClaimOwners(ctx, set, pod); ferr != nil {
			c.podEvent("update", set, pod, ferr)
			return ferr
		}
	}
	c.podEvent("create", set, pod, err)
	return err
}

// updatePod mends the pod's identity and storage and its claims' owners.
func (c *Controller) updatePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if !identityMatches(set, pod) {
		pod.Name = PodName(set.Name, ordinalOf(pod))
		pod.Namespace = set.Namespace
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	}
	if !storageMatches(set, pod) {
		setStorage(set, pod)
		if err := c.createClaims(ctx, set, pod); err != nil {
			c.podEvent("update", set, pod, err)
			return err
		}
	}
	if match, err := c.claimOwnersMatch(set, pod); err != nil {
		c.podEvent("update", set, pod, err)
		return err
	} else if !match {
		if err := c.fixClaimOwners(ctx, set, pod); err != nil {
			c.podEvent("update", set, pod, err)
			return err
		}
	}
	_, err := c.client.CoreV1().Pods(set.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
	c.podEvent("update", set, pod, err)
	return err
}

func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(set.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	c.podEvent("delete", set, pod, err)
	return err
}

// createClaims makes the pod's claims that are missing; a claim being
// deleted is an error (createPersistentVolumeClaims).
func (c *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	var errs []error
	for _, claim := range claimsFor(set, pod) {
		existing, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
			_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to create PVC %s: %s", claim.Name, err))
			}
			if err == nil || !apierrors.IsAlreadyExists(err) {
				c.claimEvent("create", set, pod, claim, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to retrieve PVC %s: %s", claim.Name, err))
			c.claimEvent("create", set, pod, claim, err)
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("pvc %s is being deleted", claim.Name))
		}
	}
	return errors.Join(errs...)
}

// claimOwnersMatch: every existing claim of the pod has the owners the
// policy wants (ClaimsMatchRetentionPolicy).
func (c *Controller) claimOwnersMatch(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(t.Name, set.Name, ordinalOf(pod))
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("Could not retrieve claim %s for %s when checking PVC deletion policy", name, pod.Name)
		case !claimOwnersMatch(claim, set, pod):
			return false, nil
		}
	}
	return true, nil
}

// fixClaimOwners updates the pod's claims whose owners are not what the
// policy wants (UpdatePodClaimForRetentionPolicy).
func (c *Controller) fixClaimOwners(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(t.Name, set.Name, ordinalOf(pod))
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("Could not retrieve claim %s not found for %s when checking PVC deletion policy: %w", name, pod.Name, err)
		}
		if claimOwnersMatch(claim, set, pod) {
			continue
		}
		claim = claim.DeepCopy()
		setClaimOwners(claim, set, pod)
		if _, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("Could not update claim %s for delete policy ownerRefs: %w", name, err)
		}
	}
	return nil
}

// claimIsStale: under whenScaled Delete, a claim of the pod still owned
// by an earlier pod of its name blocks making the pod (PodClaimIsStale).
func (c *Controller) claimIsStale(set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	if retentionPolicy(set).WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return false, nil
	}
	for _, claim := range claimsFor(set, pod) {
		existing, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, err
		case hasStaleOwnerRef(existing, pod, podKind):
			return true, nil
		}
	}
	return false, nil
}

// podEvent and claimEvent are the events the real controller records on
// the set (stateful_pod_control.go recordPodEvent, recordClaimEvent).
// A v1.37.2 controller starts its messages with the verb capitalised
// ("Create Pod web-0 in StatefulSet web successful"), as a real control
// plane shows; older releases wrote it in lower case.
func (c *Controller) podEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, err error) {
	if err == nil {
		c.events.Event(set, corev1.EventTypeNormal, "Successful"+title(verb),
			fmt.Sprintf("%s Pod %s in StatefulSet %s successful", title(verb), pod.Name, set.Name))
		return
	}
	c.events.Event(set, corev1.EventTypeWarning, "Failed"+title(verb),
		fmt.Sprintf("%s Pod %s in StatefulSet %s failed error: %s", title(verb), pod.Name, set.Name, err))
}

func (c *Controller) claimEvent(verb string, set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, err error) {
	if err == nil {
		c.events.Event(set, corev1.EventTypeNormal, "Successful"+title(verb),
			fmt.Sprintf("%s Claim %s Pod %s in StatefulSet %s success", title(verb), claim.Name, pod.Name, set.Name))
		return
	}
	c.events.Event(set, corev1.EventTypeWarning, "Failed"+title(verb),
		fmt.Sprintf("%s Claim %s for Pod %s in StatefulSet %s failed error: %s", title(verb), claim.Name, pod.Name, set.Name, err))
}

// countReplicas fills the status's counts from the pods as the sync found
// them (stateful_set_control.go computeReplicaStatus), and completes the
// rollout when every replica is of the revision.
func countReplicas(status *appsv1.StatefulSetStatus, pods []*corev1.Pod, revision string) {
	for _, p := range pods {
		if isCreated(p) {
			status.Replicas++
		}
		if isRunningAndReady(p) {
			status.ReadyReplicas++
			status.AvailableReplicas++ // minReadySeconds is not modelled
		}
		if isCreated(p) && !isTerminating(p) && p.Labels[appsv1.StatefulSetRevisionLabel] == revision {
			status.CurrentReplicas++
			status.UpdatedReplicas++
		}
	}
}

// updateStatus writes the status when it changed
// (stateful_set_status_updater.go, inconsistentStatus).
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, status appsv1.StatefulSetStatus) error {
	s := set.Status
	if status.ObservedGeneration <= s.ObservedGeneration && status.Replicas == s.Replicas &&
		status.CurrentReplicas == s.CurrentReplicas && status.ReadyReplicas == s.ReadyReplicas &&
		status.UpdatedReplicas == s.UpdatedReplicas && status.CurrentRevision == s.CurrentRevision &&
		status.AvailableReplicas == s.AvailableReplicas && status.UpdateRevision == s.UpdateRevision {
		return nil
	}
	set.Status = status
	_, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
	return err
}
