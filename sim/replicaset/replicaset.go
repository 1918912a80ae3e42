// Package replicaset is the simulated ReplicaSet controller of the
// kube-controller-manager (kubernetes pkg/controller/replicaset): it makes
// and deletes pods until each ReplicaSet has spec.replicas active pods,
// names them by generateName <rs>- (the API server adds the random
// suffix, from the simulation's seed), records the real events, and keeps
// the status counts.
//
// Not modelled: adoption and release of pods by label (pods are the
// ReplicaSet's by controller reference only), expectations (the
// simulation's loop delivers a sync's writes to the caches before the
// next sync), burst limits and slow-start batches, minReadySeconds, the
// ReplicaFailure condition.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/csisim/csisim/sim/controller"
)

// The name the controller's events carry as their source.
const eventSource = "replicaset-controller"

// Event reasons and messages of the pod control (kubernetes
// pkg/controller/controller_utils.go RealPodControl).
const (
	SuccessfulCreatePodReason = "SuccessfulCreate"
	FailedCreatePodReason     = "FailedCreate"
	SuccessfulDeletePodReason = "SuccessfulDelete"
	FailedDeletePodReason     = "FailedDelete"
)

var rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet controller.
type Controller struct {
	client kubernetes.Interface
	sets   appslisters.ReplicaSetLister
	pods   corelisters.PodLister
	queue  controller.Queue
	events record.EventRecorder
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	c := &Controller{client: client, queue: rt.NewQueue("replicaset")}
	c.events, _ = rt.NewEventRecorder(client, eventSource, "")
	sets, pods := factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	c.sets, c.pods = sets.Lister(), pods.Lister()
	_, _ = sets.Informer().AddEventHandler(controller.EnqueueHandler(c.queue))
	_, _ = pods.Informer().AddEventHandler(controller.EnqueueControllerHandler(c.queue, rsKind, controller.Getter[*appsv1.ReplicaSet](c.get).UID))
	return c
}

// get is the ReplicaSet ns/name from the lister (controller.Getter).
func (c *Controller) get(ns, name string) (*appsv1.ReplicaSet, error) {
	return c.sets.ReplicaSets(ns).Get(name)
}

// Workers is the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "replicaset", Queue: c.queue, Sync: c.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	cached, ok, err := controller.Getter[*appsv1.ReplicaSet](c.get).Lookup(key)
	if !ok {
		return err
	}
	rs := cached.DeepCopy()
	all, err := c.pods.Pods(rs.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	for _, p := range all {
		if metav1.IsControlledBy(p, rs) && isActive(p) {
			active = append(active, p)
		}
	}
	var manageErr error
	if rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, active, rs)
	}
	return errors.Join(manageErr, c.updateStatus(ctx, rs, active))
}

// isActive: neither finished nor being deleted (controller.FilterActivePods).
func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// manageReplicas makes or deletes the pods that differ from spec.replicas.
func (c *Controller) manageReplicas(ctx context.Context, active []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	diff := len(active) - int(want)
	var errs []error
	for ; diff < 0; diff++ {
		if err := c.createPod(ctx, rs); err != nil {
			errs = append(errs, err)
			break // the real slow start stops at a failed batch
		}
	}
	if diff > 0 {
		for _, p := range podsToDelete(active, diff) {
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				c.events.Eventf(rs, corev1.EventTypeWarning, FailedDeletePodReason, "Error deleting: %v", err)
				errs = append(errs, err)
				continue
			}
			c.events.Eventf(rs, corev1.EventTypeNormal, SuccessfulDeletePodReason, "Deleted pod: %v", p.Name)
		}
	}
	return errors.Join(errs...)
}

// createPod makes a pod from the template, named by the API server after
// the ReplicaSet (controller.GetPodFromTemplate, getPodsPrefix).
func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	t := rs.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: rs.Name + "-", Namespace: rs.Namespace,
			Labels: t.Labels, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, rsKind)},
		},
		Spec: t.Spec,
	}
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.events.Eventf(rs, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating: %v", err)
		return err
	}
	c.events.Eventf(rs, corev1.EventTypeNormal, SuccessfulCreatePodReason, "Created pod: %v", created.Name)
	return nil
}

// podsToDelete picks n pods, the least far along first
// (controller.ActivePods ordering): unscheduled before scheduled, pending
// before unknown before running, not ready before ready, then the newest.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	phaseRank := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b *corev1.Pod) int {
		if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
			if a.Spec.NodeName == "" {
				return -1
			}
			return 1
		}
		if pa, pb := phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]; pa != pb {
			return pa - pb
		}
		if ra, rb := isReady(a), isReady(b); ra != rb {
			if !ra {
				return -1
			}
			return 1
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.After(b.CreationTimestamp.Time) {
				return -1
			}
			return 1
		}
		return cmpString(a.Name, b.Name)
	})
	if n > len(sorted) {
		n = len(sorted)
	}
	return sorted[:n]
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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

// updateStatus writes the counts when they changed (replica_set_utils.go
// calculateStatus, updateReplicaSetStatus). Available is Ready, as
// minReadySeconds is not modelled.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	status := rs.Status
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	sel := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	for _, p := range active {
		if sel.Matches(labels.Set(p.Labels)) {
			status.FullyLabeledReplicas++
		}
		if isReady(p) {
			status.ReadyReplicas++
			status.AvailableReplicas++
		}
	}
	status.ObservedGeneration = rs.Generation
	if status.Replicas == rs.Status.Replicas && status.FullyLabeledReplicas == rs.Status.FullyLabeledReplicas &&
		status.ReadyReplicas == rs.Status.ReadyReplicas && status.AvailableReplicas == rs.Status.AvailableReplicas &&
		status.ObservedGeneration == rs.Status.ObservedGeneration {
		return nil
	}
	rs.Status = status
	_, err := c.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating the status of ReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}
