// Package daemonset is the simulated DaemonSet controller of the
// kube-controller-manager (kubernetes pkg/controller/daemon): for each
// DaemonSet it keeps one pod on every node that should run one — by the
// template's nodeSelector, required node affinity and tolerations, plus
// the tolerations the controller adds to every daemon pod (placement.go)
// — pinned there by a node-name affinity the scheduler honours; it labels
// the pods with their revision (history.go), replaces old ones within
// maxUnavailable (update.go), records the real events and keeps the
// status counts (status.go).
//
// Not modelled: adoption and release of pods by label (pods are the
// DaemonSet's by controller reference only), expectations (the loop
// delivers a sync's writes to the caches before the next sync), burst
// limits and slow-start batches, maxSurge, the history limit's clean-up
// and hash collisions.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/replicaset"
)

// The name the controller's events carry as their source.
const eventSource = "daemonset-controller"

// Event reasons and messages of the DaemonSet controller
// (pkg/controller/daemon/daemon_controller.go); its pods' creations and
// deletions are the pod control's (replicaset's reasons).
const (
	SelectingAllReason       = "SelectingAll"
	FailedDaemonPodReason    = "FailedDaemonPod"
	SucceededDaemonPodReason = "SucceededDaemonPod"
)

// templateGenerationLabel is the pod label with the DaemonSet's template
// generation, kept for backward compatibility
// (extensions/v1beta1 DaemonSetTemplateGenerationKey); the API server
// keeps the generation in the DaemonSet's annotation
// appsv1.DeprecatedTemplateGeneration.
const templateGenerationLabel = "pod-template-generation"

// The backoff of deleting a failed daemon pod on a node, as
// kube-controller-manager sets it up (cmd/kube-controller-manager
// apps.go: flowcontrol.NewBackOff(1*time.Second, 15*time.Minute)).
const (
	failedPodBackoffStart = time.Second
	failedPodBackoffMax   = 15 * time.Minute
)

var dsKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the DaemonSet controller.
type Controller struct {
	client    kubernetes.Interface
	sets      appslisters.DaemonSetLister
	revisions appslisters.ControllerRevisionLister
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	queue     controller.Queue
	events    record.EventRecorder
	clock     clock.PassiveClock
	// failedBackoff is the backoff of each (DaemonSet, generation, node)
	// whose failed pod was deleted.
	failedBackoff map[string]backoff
}

type backoff struct {
	delay time.Duration
	last  time.Time
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	c := &Controller{client: client, queue: rt.NewQueue("daemonset"), clock: rt.Clock, failedBackoff: map[string]backoff{}}
	c.events, _ = rt.NewEventRecorder(client, eventSource, "")
	sets, revisions := factory.Apps().V1().DaemonSets(), factory.Apps().V1().ControllerRevisions()
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	c.sets, c.revisions, c.pods, c.nodes = sets.Lister(), revisions.Lister(), pods.Lister(), nodes.Lister()
	_, _ = sets.Informer().AddEventHandler(controller.EnqueueHandler(c.queue))
	_, _ = revisions.Informer().AddEventHandler(controller.EnqueueControllerHandler(c.queue, dsKind, c.setUID))
	_, _ = pods.Informer().AddEventHandler(controller.EnqueueControllerHandler(c.queue, dsKind, c.setUID))
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeChanged(nil, obj) },
		UpdateFunc: c.nodeChanged,
	})
	return c
}

// setUID is the UID of the DaemonSet ns/name, for the pod handler.
func (c *Controller) setUID(ns, name string) (types.UID, error) {
	ds, err := c.sets.DaemonSets(ns).Get(name)
	if err != nil {
		return "", err
	}
	return ds.UID, nil
}

// nodeChanged queues the DaemonSets whose placement the node's change
// alters (addNode, updateNode): on an added node, those that should run
// there; on an update, those for which it changed whether a pod should
// run or go on running. A cluster without DaemonSets queues nothing.
func (c *Controller) nodeChanged(old, cur any) {
	curNode, ok := controller.Unwrap(cur).(*corev1.Node)
	if !ok {
		return
	}
	oldNode, _ := controller.Unwrap(old).(*corev1.Node)
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		run, keep := shouldRun(curNode, ds)
		if oldNode == nil && !run {
			continue
		}
		if oldNode != nil {
			if oldRun, oldKeep := shouldRun(oldNode, ds); oldRun == run && oldKeep == keep {
				continue
			}
		}
		c.queue.Add(ds.Namespace + "/" + ds.Name)
	}
}

// Workers is the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "daemonset", Queue: c.queue, Sync: c.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check, and writes nothing until
// there is a DaemonSet.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

// sync is syncDaemonSet: the revision of the template, the pods each node
// should have, the rolling update, then the status.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	cached, err := c.sets.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ds := cached.DeepCopy()
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	if reflect.DeepEqual(ds.Spec.Selector, &metav1.LabelSelector{}) {
		c.events.Eventf(ds, corev1.EventTypeWarning, SelectingAllReason, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		return nil
	}
	hash, err := c.currentRevision(ctx, ds)
	if err != nil {
		return fmt.Errorf("failed to construct revisions of DaemonSet: %w", err)
	}
	manageErr := c.manage(ctx, ds, nodes, hash)
	if manageErr == nil && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		manageErr = c.rollingUpdate(ctx, ds, nodes, hash)
	}
	return errors.Join(manageErr, c.updateStatus(ctx, ds, nodes, hash))
}

// podsByNode are ds's pods by the node each is for (getNodesToDaemonPods).
func (c *Controller) podsByNode(ds *appsv1.DaemonSet) (map[string][]*corev1.Pod, error) {
	all, err := c.pods.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string][]*corev1.Pod{}
	for _, p := range all {
		if !metav1.IsControlledBy(p, ds) {
			continue
		}
		if node, err := targetNode(p); err == nil {
			out[node] = append(out[node], p)
		}
	}
	return out, nil
}

// manage makes a pod on each node that should run one and has none, and
// deletes those on nodes that should not keep them, the failed and
// succeeded ones (a failed one at most once per backoff), and all but the
// oldest where a node has several (manage, podsShouldBeOnNode).
func (c *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := c.podsByNode(ds)
	if err != nil {
		return err
	}
	var create []string
	var remove []*corev1.Pod
	known := map[string]bool{}
	for _, node := range nodes {
		known[node.Name] = true
		run, keep := shouldRun(node, ds)
		pods, exists := byNode[node.Name]
		switch {
		case run && !exists:
			create = append(create, node.Name)
		case keep:
			remove = append(remove, c.excessPods(ds, node.Name, pods)...)
		case exists:
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					remove = append(remove, p)
				}
			}
		}
	}
	// Unscheduled pods for nodes that are gone (getUnscheduledPodsWithoutNode).
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				remove = append(remove, p)
			}
		}
	}
	sortPods(remove)
	return c.syncNodes(ctx, ds, remove, create, hash)
}

// excessPods are the pods on a node that should keep ds's pod which must
// go: failed (once its backoff allows) and succeeded ones, then all but
// the oldest of the others.
func (c *Controller) excessPods(ds *appsv1.DaemonSet, node string, pods []*corev1.Pod) []*corev1.Pod {
	var out, running []*corev1.Pod
	for _, p := range pods {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Status.Phase == corev1.PodFailed:
			if !c.failedPodMayGo(ds, node) {
				continue
			}
			c.events.Eventf(ds, corev1.EventTypeWarning, FailedDaemonPodReason,
				"Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node)
			out = append(out, p)
		case p.Status.Phase == corev1.PodSucceeded:
			c.events.Eventf(ds, corev1.EventTypeNormal, SucceededDaemonPodReason,
				"Found succeeded daemon pod %s/%s on node %s, will try to delete it", p.Namespace, p.Name, node)
			out = append(out, p)
		default:
			running = append(running, p)
		}
	}
	if len(running) > 1 {
		sortOldestFirst(running)
		out = append(out, running[1:]...)
	}
	return out
}

// failedPodMayGo says whether the failed pod of ds on node may be deleted
// now, and if so starts or doubles the backoff; if not, it queues ds again
// for when it may.
func (c *Controller) failedPodMayGo(ds *appsv1.DaemonSet, node string) bool {
	key := fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, node)
	now := c.clock.Now()
	b, ok := c.failedBackoff[key]
	if ok && now.Sub(b.last) < b.delay {
		c.queue.AddAfter(ds.Namespace+"/"+ds.Name, b.delay)
		return false
	}
	if !ok {
		b.delay = failedPodBackoffStart
	} else {
		b.delay = min(2*b.delay, failedPodBackoffMax)
	}
	b.last = now
	c.failedBackoff[key] = b
	return true
}

// syncNodes deletes the pods and makes one on each node of create, from
// the template with the daemon tolerations and the revision's labels,
// pinned to its node (syncNodes, CreatePodTemplate).
func (c *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, remove []*corev1.Pod, create []string, hash string) error {
	var errs []error
	for _, node := range create {
		if err := c.createPod(ctx, ds, node, hash); err != nil {
			errs = append(errs, err)
			break // the real slow start stops at a failed batch
		}
	}
	for _, p := range remove {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			c.events.Eventf(ds, corev1.EventTypeWarning, replicaset.FailedDeletePodReason, "Error deleting: %v", err)
			errs = append(errs, err)
			continue
		}
		c.events.Eventf(ds, corev1.EventTypeNormal, replicaset.SuccessfulDeletePodReason, "Deleted pod: %v", p.Name)
	}
	return errors.Join(errs...)
}

// createPod makes ds's pod for node, named by the API server after ds.
func (c *Controller) createPod(ctx context.Context, ds *appsv1.DaemonSet, node, hash string) error {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	lbls := map[string]string{}
	for k, v := range t.Labels {
		lbls[k] = v
	}
	if gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		lbls[templateGenerationLabel] = gen
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	t.Spec.Affinity = pinToNode(t.Spec.Affinity, node)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ds.Name + "-", Namespace: ds.Namespace,
			Labels: lbls, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)},
		},
		Spec: t.Spec,
	}
	created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.events.Eventf(ds, corev1.EventTypeWarning, replicaset.FailedCreatePodReason, "Error creating: %v", err)
		return err
	}
	c.events.Eventf(ds, corev1.EventTypeNormal, replicaset.SuccessfulCreatePodReason, "Created pod: %v", created.Name)
	return nil
}
