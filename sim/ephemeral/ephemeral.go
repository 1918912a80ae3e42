// Package ephemeral is the simulated ephemeral volume controller of the
// kube-controller-manager (kubernetes pkg/controller/volume/ephemeral):
// for every generic ephemeral volume of a pod (pod.spec.volumes[].ephemeral)
// it creates the claim <pod>-<volume> from the volume's claim template,
// with the pod as its controller owner, so that the claim goes with the
// pod through the garbage collector. A claim of that name that the pod
// does not own is a conflict: the controller says so on the pod and the
// pod cannot use it (the scheduler and the kubelet refuse it too).
package ephemeral

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

const (
	// Component is the controller's name in the kube-controller-manager
	// (--controllers), the service account it runs as, and the user agent
	// the simulation writes as.
	Component = "ephemeral-volume-controller"
	// eventSource is the component its events name (controller.go's
	// recorder: EventSource{Component: "ephemeral_volume"}); also its
	// queue's name.
	eventSource = "ephemeral_volume"
	// EventFailedBinding is the reason of the event on a pod whose
	// ephemeral volume cannot be handled (kubernetes
	// pkg/controller/volume/events/event.go).
	EventFailedBinding = "FailedBinding"
)

// Controller is the ephemeral volume controller.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	podIndex cache.Indexer
	claims   corelisters.PersistentVolumeClaimLister
	queue    controller.Queue
	events   record.EventRecorder
}

// New wires the controller to the factory's pod and claim informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	c := &Controller{client: client, queue: rt.NewQueue(eventSource)}
	c.events, _ = rt.NewEventRecorder(client, eventSource, "")
	podInf, claimInf := factory.Core().V1().Pods(), factory.Core().V1().PersistentVolumeClaims()
	c.pods, c.claims = podInf.Lister(), claimInf.Lister()
	// The real controller installs its pods-by-claim index too.
	_ = volumeutil.AddIndexes(podInf.Informer(), volumeutil.PodsByClaim)
	c.podIndex = podInf.Informer().GetIndexer()
	// A pod's spec does not change: only new pods matter. Deleting the
	// claims is the garbage collector's work, through the owner reference.
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: c.enqueuePod})
	// A claim someone deleted is made again for the pods that use it.
	_, _ = claimInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.onClaimDelete})
	return c
}

// enqueuePod queues pods that have a generic ephemeral volume and are not
// being deleted.
func (c *Controller) enqueuePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp != nil {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.Ephemeral != nil {
			if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
				c.queue.Add(key)
			}
			return
		}
	}
}

func (c *Controller) onClaimDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	pods, err := c.podIndex.ByIndex(volumeutil.PodsByClaim, claim.Namespace+"/"+claim.Name)
	if err != nil {
		return
	}
	for _, p := range pods {
		c.enqueuePod(p)
	}
}

// Workers is the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: eventSource, Queue: c.queue, Sync: c.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil {
		return nil
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if err := c.handleVolume(ctx, pod, v); err != nil {
			// Worded as controller.go's syncHandler; the pod is tried
			// again with the queue's backoff.
			c.events.Event(pod, corev1.EventTypeWarning, EventFailedBinding, fmt.Sprintf("ephemeral volume %s: %v", v.Name, err))
			return fmt.Errorf("pod %s, ephemeral volume %s: %v", key, v.Name, err)
		}
	}
	return nil
}

// handleVolume makes the claim of one generic ephemeral volume, unless it
// is there; one the pod does not own is an error (ephemeral.VolumeIsForPod:
// "PVC <ns>/<name> was not created for pod <ns>/<pod> (pod is not owner)").
func (c *Controller) handleVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	if v.Ephemeral == nil {
		return nil
	}
	name := ephemeral.VolumeClaimName(pod, v)
	claim, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if claim != nil && err == nil {
		return ephemeral.VolumeIsForPod(pod, claim)
	}
	isTrue := true
	tmpl := v.Ephemeral.VolumeClaimTemplate.DeepCopy()
	if tmpl == nil {
		return nil // the API server refuses such a pod
	}
	claim = &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			// The pod owns and controls the claim, and the garbage
			// collector waits for the claim before it removes the pod
			// in foreground deletion (controller.go sets both).
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: &isTrue, BlockOwnerDeletion: &isTrue}},
			Annotations: tmpl.Annotations,
			Labels:      tmpl.Labels,
		},
		Spec: tmpl.Spec,
	}
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PVC %s: %v", name, err)
	}
	return nil
}
