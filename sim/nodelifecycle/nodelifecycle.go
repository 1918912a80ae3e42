// Package nodelifecycle is the simulated node lifecycle of
// kube-controller-manager: the node lifecycle controller (a node whose
// kubelet stops renewing its Lease for the grace period becomes Unknown and
// gets the unreachable taints, its pods NotReady), the taint eviction
// controller (pods that do not tolerate a NoExecute taint, or only for some
// seconds, are deleted), and the parts of the pod garbage collector that
// force-delete terminating pods on nodes marked out of service and pods
// whose Node is gone.
package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"k8s.io/kubernetes/pkg/controller/util/consistency"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/timing"
)

// The real defaults (kube-controller-manager v1.37 --help); a scenario's
// cluster.timing divides them (Controller.SetTiming).
const (
	// MonitorPeriod is --node-monitor-period.
	MonitorPeriod = timing.DefaultNodeMonitorPeriod
	// GracePeriod is --node-monitor-grace-period.
	GracePeriod = timing.DefaultNodeMonitorGracePeriod
)

// Controller watches node heartbeats and acts on lost nodes.
type Controller struct {
	client         kubernetes.Interface // the node lifecycle controller's
	evictionClient kubernetes.Interface // the taint eviction controller's
	podGCClient    kubernetes.Interface // the pod garbage collector's
	events         record.EventRecorder
	// evictions reports as the taint eviction controller, a controller of
	// its own in kube-controller-manager since v1.29.
	evictions record.EventRecorder
	clock     clock.PassiveClock
	nodes     corelisters.NodeLister
	pods      corelisters.PodLister
	leases    coordinationlisters.LeaseLister
	queue     controller.Queue
	stopRecs  func()
	// newRecorders makes the event recorders a restarted controller starts
	// with, which have not seen the events of the ones before.
	newRecorders func() (events, evictions record.EventRecorder, stop func())

	// leaseStore is the Lease informer's store; leaseVersions the lease
	// circuit breaker's consistency store over it (leasecheck.go).
	leaseStore    cache.Store
	leaseVersions consistency.ConsistencyStore

	// gracePeriod is --node-monitor-grace-period (GracePeriod unless
	// SetTiming said otherwise).
	gracePeriod time.Duration

	mu           sync.Mutex
	registered   map[string]types.UID // nodes the controller has seen, with their UIDs
	missingSince map[string]time.Time // pod GC: nodes of pods that have no Node, since when
	planned      map[string]string    // taint eviction: pods (by key) whose eviction is planned, to their node
}

// Clients are the API clients of the three controllers this package
// plays, each under its own name, as kube-controller-manager runs every
// controller with a service account of its own: the node lifecycle
// controller, the taint eviction controller and the pod garbage
// collector. The last two default to the first.
type Clients struct {
	NodeLifecycle, TaintEviction, PodGC kubernetes.Interface
}

// New wires the controller to the factory's informers.
func New(clients Clients, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	client := clients.NodeLifecycle
	if clients.TaintEviction == nil {
		clients.TaintEviction = client
	}
	if clients.PodGC == nil {
		clients.PodGC = client
	}
	c := &Controller{client: client, evictionClient: clients.TaintEviction, podGCClient: clients.PodGC, newRecorders: func() (record.EventRecorder, record.EventRecorder, func()) {
		events, stop := rt.NewEventRecorder(client, "node-controller", "")
		evictions, stopEvictions := rt.NewEventRecorder(clients.TaintEviction, "taint-eviction-controller", "")
		return events, evictions, func() { stop(); stopEvictions() }
	}, clock: rt.Clock, queue: rt.NewQueue("node-lifecycle"),
		gracePeriod: GracePeriod, registered: map[string]types.UID{}, missingSince: map[string]time.Time{}, planned: map[string]string{},
		nodes: factory.Core().V1().Nodes().Lister(), pods: factory.Core().V1().Pods().Lister(),
		leases: factory.Coordination().V1().Leases().Lister(), leaseStore: factory.Coordination().V1().Leases().Informer().GetStore()}
	c.events, c.evictions, c.stopRecs = c.newRecorders()
	c.leaseVersions = c.newLeaseVersions()
	// Taints and pods change what eviction must do; heartbeats are looked
	// at every MonitorPeriod, as the real controller does.
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(controller.EnqueueHandler(c.queue))
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.podDeleted})
	return c
}

// Workers are the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "node-lifecycle", Queue: c.queue, Sync: c.syncNode}}
}

// Monitor queues every node, and reports nodes it sees for the first
// time and nodes that are gone, as the real controller does on its monitor
// period; run it every MonitorPeriod.
func (c *Controller) Monitor(context.Context) {
	nodes, _ := c.nodes.List(labels.Everything())
	present := map[string]bool{}
	for _, n := range nodes {
		present[n.Name] = true
		c.mu.Lock()
		_, known := c.registered[n.Name]
		c.registered[n.Name] = n.UID
		c.mu.Unlock()
		if !known {
			c.events.Eventf(n, corev1.EventTypeNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Name, n.Name)
		}
		c.queue.Add(n.Name)
	}
	c.mu.Lock()
	var gone []string
	for name := range c.registered {
		if !present[name] {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	uids := map[string]types.UID{}
	for _, name := range gone {
		uids[name] = c.registered[name]
		delete(c.registered, name)
	}
	c.mu.Unlock()
	for _, name := range gone {
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uids[name]}
		c.events.Eventf(ref, corev1.EventTypeNormal, "RemovingNode", "Node %s event: Removing Node %s from Controller", name, name)
	}
}

func (c *Controller) syncNode(ctx context.Context, name string) error {
	if pod, ok := strings.CutPrefix(name, cancelKeyPrefix); ok {
		c.cancel(pod)
		return nil
	}
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if node.Annotations[corev1.ObjectTTLAnnotationKey] == "" {
		// What the TTL controller does for a cluster of this size: its
		// annotation says how long kubelets may cache objects, 0 on
		// small clusters.
		n := node.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[corev1.ObjectTTLAnnotationKey] = "0"
		if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("annotating node %s: %w", node.Name, err)
		}
		return nil // the update brings the node back
	}
	if updated, err := c.taintNoSchedule(ctx, node); err != nil || updated {
		return err // the update brings the node back
	}
	if !c.leasesReady(node) {
		return nil // judged again at the next monitor period
	}
	now := c.clock.Now()
	if c.lastHeartbeat(node).Add(c.gracePeriod).Before(now) {
		if !c.heartbeatReallyLost(ctx, node) {
			return nil
		}
		if err := c.markUnknown(ctx, node); err != nil {
			return err
		}
	} else if ready(node) == corev1.ConditionTrue && hasTaint(node, corev1.TaintNodeUnreachable) {
		if err := c.setUnreachableTaints(ctx, node, false); err != nil {
			return err
		}
	}
	return c.evict(ctx, node)
}

// lastHeartbeat is the later of the Lease renewal and the Ready
// condition's heartbeat.
func (c *Controller) lastHeartbeat(node *corev1.Node) time.Time {
	var last time.Time
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.LastHeartbeatTime.After(last) {
			last = cond.LastHeartbeatTime.Time
		}
	}
	if lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(last) {
		last = lease.Spec.RenewTime.Time
	}
	if last.IsZero() {
		last = node.CreationTimestamp.Time
	}
	return last
}

func ready(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// noScheduleKeys are the NoSchedule taints the no-schedule pass keeps in
// step with the node: not-ready while its Ready condition is False,
// unschedulable while it is cordoned. (The unreachable taint of a Ready
// condition Unknown is written a write before its NoExecute twin:
// markUnknown, setUnreachableTaints.)
var noScheduleKeys = []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnschedulable}

// taintNoSchedule is the real controller's no-schedule pass
// (doNoScheduleTaintingPass,
// pkg/controller/nodelifecycle/node_lifecycle_controller.go) for the
// taints of noScheduleKeys: it adds those the node's state calls for, with
// the time they are added, and removes the others — the
// node.kubernetes.io/not-ready:NoSchedule taint the API server puts on
// every new Node (TaintNodesByCondition) included, once the node is Ready
// or has never reported. It adds in one write and removes in another, as
// SwapNodeControllerTaint does, and reports whether it wrote.
func (c *Controller) taintNoSchedule(ctx context.Context, node *corev1.Node) (bool, error) {
	want := map[string]bool{
		corev1.TaintNodeNotReady:      hasCondition(node, corev1.NodeReady, corev1.ConditionFalse),
		corev1.TaintNodeUnschedulable: node.Spec.Unschedulable,
	}
	has := func(n *corev1.Node, key string) bool {
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == corev1.TaintEffectNoSchedule })
	}
	wrote := false
	n := node.DeepCopy()
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	for _, key := range noScheduleKeys {
		if want[key] && !has(n, key) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now})
			wrote = true
		}
	}
	if wrote {
		updated, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err != nil {
			return false, fmt.Errorf("tainting node %s: %w", node.Name, err)
		}
		n = updated.DeepCopy()
	}
	unwanted := func(t corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule && slices.Contains(noScheduleKeys, t.Key) && !want[t.Key]
	}
	if slices.ContainsFunc(n.Spec.Taints, unwanted) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, unwanted)
		if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return wrote, fmt.Errorf("untainting node %s: %w", node.Name, err)
		}
		wrote = true
	}
	return wrote, nil
}

// hasCondition says whether the node has the condition with the status.
func hasCondition(node *corev1.Node, t corev1.NodeConditionType, status corev1.ConditionStatus) bool {
	return slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == t && c.Status == status })
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// markUnknown sets the node's conditions Unknown, taints it unreachable and
// marks its pods not ready.
func (c *Controller) markUnknown(ctx context.Context, node *corev1.Node) error {
	if ready(node) != corev1.ConditionUnknown {
		n := node.DeepCopy()
		now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
		for i := range n.Status.Conditions {
			cond := &n.Status.Conditions[i]
			cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = corev1.ConditionUnknown,
				"NodeStatusUnknown", "Kubelet stopped posting node status.", now
		}
		if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("marking node %s Unknown: %w", node.Name, err)
		}
		c.events.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
		if err := c.markPodsNotReady(ctx, node.Name); err != nil {
			return err
		}
	}
	if !hasTaint(node, corev1.TaintNodeUnreachable) {
		fresh, err := c.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return c.setUnreachableTaints(ctx, fresh, true)
	}
	return nil
}

// setUnreachableTaints adds or removes the NoSchedule and NoExecute
// unreachable taints. It adds them in two writes, NoSchedule first, as the
// real controller does in two passes: the NoSchedule taint in the pass a
// node's update starts (doNoScheduleTaintingPass, its Ready condition now
// Unknown), the NoExecute one in the rate-limited tainting pass that runs
// every 100 ms (doNoExecuteTaintingPass;
// pkg/controller/nodelifecycle/node_lifecycle_controller.go), so that a
// node is seen with the NoSchedule taint alone, as on a real cluster.
func (c *Controller) setUnreachableTaints(ctx context.Context, node *corev1.Node, add bool) error {
	n := node.DeepCopy()
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeUnreachable })
	if !add {
		if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("untainting node %s: %w", node.Name, err)
		}
		return nil
	}
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: effect, TimeAdded: &now})
		updated, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("tainting node %s unreachable:%s: %w", node.Name, effect, err)
		}
		n = updated
	}
	return nil
}

func (c *Controller) markPodsNotReady(ctx context.Context, nodeName string) error {
	pods, _ := c.pods.List(labels.Everything())
	for _, pod := range pods {
		if pod.Spec.NodeName != nodeName {
			continue
		}
		p := pod.DeepCopy()
		changed := false
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady && p.Status.Conditions[i].Status != corev1.ConditionFalse {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
				p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(c.clock.Now()).Rfc3339Copy()
				changed = true
			}
		}
		if !changed {
			continue
		}
		if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		// After the update, so that the pod still exists.
		c.events.Event(p, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return nil
}

// evict deletes the node's pods that do not tolerate its NoExecute taints,
// at once or when their tolerationSeconds have passed since the taint.
func (c *Controller) evict(ctx context.Context, node *corev1.Node) error {
	var noExecute []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	if len(noExecute) == 0 {
		c.cancel(c.plannedOn(node.Name)...)
		return nil
	}
	pods, _ := c.pods.List(labels.Everything())
	now := c.clock.Now()
	var wait time.Duration
	for _, pod := range pods {
		if pod.Spec.NodeName != node.Name || pod.DeletionTimestamp != nil {
			continue
		}
		due, ok := evictionTime(pod, noExecute)
		if !ok {
			continue // tolerated for ever
		}
		key := pod.Namespace + "/" + pod.Name
		if due.After(now) {
			c.plan(key, node.Name)
			if w := due.Sub(now); wait == 0 || w < wait {
				wait = w
			}
			continue
		}
		c.carriedOut(key)
		// The real controller refers to the pod by name only, without its
		// UID: the eviction of a later pod of the same name counts on the
		// same event (as seen on the real control plane).
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}
		c.evictions.Eventf(ref, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
		if err := c.markDisruptedAndDelete(ctx, pod); err != nil {
			return err
		}
	}
	if wait > 0 {
		c.queue.AddAfter(node.Name, wait)
	}
	return nil
}

// markDisruptedAndDelete is the taint eviction controller's deletion: the
// pod first gets the DisruptionTarget condition (so that a Job's pod
// failure policy can tell an eviction from a crash), then is deleted with
// its own grace period.
func (c *Controller) markDisruptedAndDelete(ctx context.Context, pod *corev1.Pod) error {
	if !slices.ContainsFunc(pod.Status.Conditions, func(pc corev1.PodCondition) bool {
		return pc.Type == corev1.DisruptionTarget && pc.Status == corev1.ConditionTrue && pc.Reason == "DeletionByTaintManager"
	}) {
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
			Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(c.clock.Now()).Rfc3339Copy()}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
		if err != nil {
			return err
		}
		_, err = c.evictionClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("marking pod %s/%s for eviction: %w", pod.Namespace, pod.Name, err)
		}
	}
	err := c.evictionClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// evictionTime is when a pod must go for the taints: at once for a taint
// it does not tolerate, at the taint's time plus the shortest
// tolerationSeconds otherwise; ok is false when every taint is tolerated
// for ever.
func evictionTime(pod *corev1.Pod, taints []corev1.Taint) (time.Time, bool) {
	var due time.Time
	found := false
	for _, t := range taints {
		added := time.Time{}
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		seconds, tolerated, forever := toleration(pod, t)
		switch {
		case !tolerated:
			return added, true
		case forever:
			continue
		}
		at := added.Add(time.Duration(seconds) * time.Second)
		if !found || at.Before(due) {
			due, found = at, true
		}
	}
	return due, found
}

func toleration(pod *corev1.Pod, taint corev1.Taint) (seconds int64, tolerated, forever bool) {
	for _, tol := range pod.Spec.Tolerations {
		if !tol.ToleratesTaint(klog.Background(), &taint, false) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return 0, true, true
		}
		if !tolerated || *tol.TolerationSeconds < seconds {
			seconds, tolerated = *tol.TolerationSeconds, true
		}
	}
	return seconds, tolerated, false
}

// Restart makes the controller forget what it keeps in memory, as a
// restarted kube-controller-manager: it registers every node again at its
// next monitor period, and the pod garbage collector's quarantine of
// missing nodes starts over.
func (c *Controller) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered = map[string]types.UID{}
	c.missingSince = map[string]time.Time{}
	c.leaseVersions = c.newLeaseVersions()
	c.stopRecs()
	c.events, c.evictions, c.stopRecs = c.newRecorders()
}

// SetTiming sets the grace period from the cluster's timing, as
// --node-monitor-grace-period does; the monitor period is the caller's
// (Start runs Monitor every t.NodeMonitorPeriod()).
func (c *Controller) SetTiming(t timing.Timing) { c.gracePeriod = t.NodeMonitorGracePeriod() }

// Start starts the controller in a simulated cluster (controller.Start),
// with the taint eviction controller and the pod garbage collector under
// their own names: its worker, its monitor every node monitor period
// (MonitorPeriod unless the cluster's timing says otherwise) and the pod
// GC every PodGCPeriod, and Restart for a kube-controller-manager restart.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	c := New(Clients{NodeLifecycle: d.Client, TaintEviction: d.ClientFor("taint-eviction-controller"), PodGC: d.ClientFor("pod-garbage-collector")},
		d.Informers, d.Runtime)
	c.SetTiming(d.Timing)
	return controller.Component{Workers: c.Workers(), Restart: c.Restart, Periodic: []controller.Periodic{
		{Every: d.Timing.NodeMonitorPeriod(), Run: c.Monitor}, {Every: PodGCPeriod, Run: c.CollectGarbage}}}, nil
}
