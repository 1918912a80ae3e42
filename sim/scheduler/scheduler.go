// Package scheduler is the simulated kube-scheduler, for what matters to
// volumes. It runs the real scheduler's filters in their order and stops
// at the first that rejects a node: NodeUnschedulable, TaintToleration,
// NodeAffinity (selector and required affinity), NodeResourcesFit (the
// pods' requests against the node's allocatable), NodeVolumeLimits (CSINode
// allocatable counts against the CSI volumes the node's pods use and the
// VolumeAttachments on it), VolumeBinding (the node affinity of bound
// volumes; for WaitForFirstConsumer claims a static volume on the node, or
// provisioning there, with capacity), PodTopologySpread (DoNotSchedule
// constraints) and InterPodAffinity (required pod affinity and
// anti-affinity, the placed pods' anti-affinity). VolumeBinding's PreFilter rejects a
// pod whose claims are missing or unbound with immediate binding before
// any node is looked at. For the chosen node it binds static volumes or
// sets volume.kubernetes.io/selected-node, and then, as the plugin's
// PreBind, looks at the claims every second until they are bound (and
// binds the pod), the provisioner takes the selected node away (it could
// not provision there) or the 600 s bind timeout is over: then the attempt
// failed with an error — a FailedScheduling event, PodScheduled=False with
// reason SchedulerError — and the pod is tried again after its backoff
// whatever happens meanwhile. A pod that fits nowhere gets a
// FailedScheduling event and PodScheduled condition worded as v1.37 words
// them (reasons counted per node, the preemption postscript) and waits,
// as in the real scheduler's unschedulable queue, for an event that may
// make it fit — a node it now fits on; a claim, volume, CSINode or
// capacity that changes; a pod or an attachment that goes — and then for
// the real backoff (1 s doubling to 10 s, ended at the backoff queue's
// next 1 s window), or for 5 minutes at most. Of
// the nodes that fit, the one the default profile's score plugins rate
// highest is chosen (score.go), the first by name among equals.
package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

// Name is the scheduler name pods ask for by default.
const Name = corev1.DefaultSchedulerName

// The real scheduler's queue for pods that did not fit: they wait in its
// unschedulable pods until an event may make them fit (or for at most
// podMaxInUnschedulablePodsDuration), and then no sooner than their
// backoff, 1 s doubling per failed attempt up to 10 s.
const (
	initialBackoff                    = time.Second
	maxBackoff                        = 10 * time.Second
	podMaxInUnschedulablePodsDuration = 5 * time.Minute
)

// Scheduler binds pending pods to nodes.
type Scheduler struct {
	client     kubernetes.Interface
	events     record.EventRecorder
	stopRecs   func()
	clock      clock.PassiveClock
	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	claims     corelisters.PersistentVolumeClaimLister
	volumes    corelisters.PersistentVolumeLister
	classes    storagelisters.StorageClassLister
	csiNodes   storagelisters.CSINodeLister
	drivers    storagelisters.CSIDriverLister
	capacities storagelisters.CSIStorageCapacityLister
	// replicaSets and statefulSets give the selectors of the system
	// default spread constraints.
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
	// podIndex and vaIndex are the informers' caches, with
	// volumeutil.PodsByNode and volumeutil.AttachmentsByNode.
	podIndex, vaIndex cache.Indexer
	queue             controller.Queue

	mu       sync.Mutex
	attempts map[string]attempt    // pod key → its failed attempts, for the backoff
	binding  map[string]preBinding // pod key → its wait in PreBind for its claims
}

// attempt is how often a pod failed to fit, how many of its last attempts
// in a row failed with an error (in PreBind), when it last failed, and the
// plugins that rejected it then: only events those plugins care about
// bring it back (the real scheduler's queueing hints, roughly); a pod that
// failed with an error comes back after its backoff whatever happens.
type attempt struct {
	failures int
	errors   int
	last     time.Time
	plugins  map[string]bool
}

// New wires a scheduler to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Scheduler {
	// The real scheduler reports as its instance <name>-<host>
	// (cmd/kube-scheduler's events recorder: reportingInstance).
	events, stop := rt.NewEventRecorder(client, Name, Name+"-"+controller.SimulatedHost)
	s := &Scheduler{client: client, events: events, stopRecs: stop, clock: rt.Clock, queue: rt.NewQueue("scheduler"),
		attempts: map[string]attempt{}, binding: map[string]preBinding{}}
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	scInf := factory.Storage().V1().StorageClasses()
	csiNodeInf := factory.Storage().V1().CSINodes()
	s.pods, s.nodes, s.claims, s.volumes = podInf.Lister(), nodeInf.Lister(), pvcInf.Lister(), pvInf.Lister()
	s.classes, s.csiNodes = scInf.Lister(), csiNodeInf.Lister()
	capInf := factory.Storage().V1().CSIStorageCapacities()
	s.drivers, s.capacities = factory.Storage().V1().CSIDrivers().Lister(), capInf.Lister()
	vaInf := factory.Storage().V1().VolumeAttachments()
	s.replicaSets, s.statefulSets = factory.Apps().V1().ReplicaSets().Lister(), factory.Apps().V1().StatefulSets().Lister()
	_ = volumeutil.AddIndexes(podInf.Informer(), volumeutil.PodsByNode)
	_ = volumeutil.AddIndexes(vaInf.Informer(), volumeutil.AttachmentsByNode)
	s.podIndex, s.vaIndex = podInf.Informer().GetIndexer(), vaInf.Informer().GetIndexer()
	// A new pod is tried at once; a pod whose spec or labels change is
	// tried again (after its backoff). Status updates, the scheduler's own
	// included, do not count.
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.enqueue(obj) },
		UpdateFunc: func(old, obj any) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			if podChanged(old.(*corev1.Pod), p) {
				s.requeue(p.Namespace + "/" + p.Name)
			}
			if old.(*corev1.Pod).Spec.NodeName == "" && p.Spec.NodeName != "" {
				s.podAssigned()
			}
			// The real scheduler's informer lists no finished pod
			// (status.phase!=Succeeded,status.phase!=Failed): a pod
			// that finishes — a deleted one, once its kubelet has
			// stopped its containers — is gone for it.
			if !finished(old.(*corev1.Pod)) && finished(p) {
				s.assignedPodGone(p)
			}
		},
		DeleteFunc: func(obj any) {
			s.enqueue(obj)
			if p, ok := controller.Unwrap(obj).(*corev1.Pod); ok {
				s.assignedPodGone(p)
			}
		},
	})
	// What can make a waiting pod fit moves it back to the queue, as the
	// real scheduler's queueing hints do on cluster events, for the pods
	// that a plugin which cares about the event rejected: a node only for
	// the pods that now fit on it (a cordon or a new taint wakes nobody); a
	// claim for the pods that use it; volumes, CSINodes and capacities for
	// the volume plugins; an attachment that goes for the volume limits.
	// Pods waiting for their claims to be bound come back with the claims.
	_, _ = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.enqueueFitting(obj) },
		UpdateFunc: func(_, obj any) { s.enqueueFitting(obj) },
	})
	onChange := func(f func(obj any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, obj any) { f(obj) }}
	}
	_, _ = pvcInf.Informer().AddEventHandler(onChange(func(obj any) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			s.requeueWhere(true, func(p *corev1.Pod, _ attempt) bool { return p.Namespace == claim.Namespace && usesClaim(p, claim.Name) })
		}
	}))
	_, _ = pvInf.Informer().AddEventHandler(onChange(func(any) {
		s.requeueWhere(true, func(_ *corev1.Pod, a attempt) bool { return a.plugins["VolumeBinding"] })
	}))
	_, _ = csiNodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.requeueWhere(false, csiNodeWakes(nil, nil)) },
		UpdateFunc: func(old, cur any) {
			o, _ := old.(*storagev1.CSINode)
			c, _ := cur.(*storagev1.CSINode)
			s.requeueWhere(false, csiNodeWakes(o, c))
		},
	})
	_, _ = capInf.Informer().AddEventHandler(onChange(func(any) {
		s.requeueWhere(false, func(_ *corev1.Pod, a attempt) bool { return a.plugins["VolumeBinding"] })
	}))
	_, _ = vaInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
		s.requeueWhere(false, func(_ *corev1.Pod, a attempt) bool { return a.plugins["NodeVolumeLimits"] })
	}})
	return s
}

// Workers are the scheduler's queue and sync function.
func (s *Scheduler) Workers() []controller.Worker {
	return []controller.Worker{{Name: "scheduler", Queue: s.queue, Sync: s.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

func (s *Scheduler) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		s.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || (pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != Name) {
		s.forget(key)
		return nil
	}
	s.mu.Lock()
	b, inPreBind := s.binding[key]
	s.mu.Unlock()
	if inPreBind {
		return s.pollPreBind(ctx, pod, b)
	}
	vols, why := s.podVolumes(pod)
	if why != "" {
		nodes, _ := s.nodes.List(labels.Everything())
		return s.unschedulable(ctx, pod, preFilterMessage(len(nodes), why), map[string]bool{"VolumeBinding": true})
	}
	node, verdicts, err := s.pickNode(pod, vols)
	if err != nil {
		return err
	}
	if node == nil {
		return s.noFit(ctx, pod, vols, verdicts)
	}
	wait, err := s.bindVolumes(ctx, pod, vols, node)
	if err != nil {
		return err
	}
	if len(wait.provision)+len(wait.static) > 0 {
		// PreBind polls the claims until they are bound.
		return s.startPreBind(key, wait)
	}
	return s.bind(ctx, pod, node.Name)
}

// bind binds the pod to the node.
func (s *Scheduler) bind(ctx context.Context, pod *corev1.Pod, node string) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	s.forget(pod.Namespace + "/" + pod.Name)
	s.events.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
	return nil
}

// pickNode returns the node the pod goes to — of the nodes that fit, the
// one that scores best (selectNode) — or the verdict of every node, by
// name, when none fits.
func (s *Scheduler) pickNode(pod *corev1.Pod, vols podVolumes) (*corev1.Node, map[string]verdict, error) {
	sn := s.snapshot()
	verdicts := map[string]verdict{}
	wanted := s.podCSIVolumes(pod)
	overLimit := func(n *corev1.Node) bool { return s.overVolumeLimit(n, wanted) }
	across := newAcrossNodes(pod, sn)
	var feasible []*corev1.Node
	for _, node := range sn.nodes {
		running := sn.pods[node.Name]
		v := fitsAll(pod, node, running, vols, overLimit, across)
		if v.fits() {
			// The real framework filters a node twice when pods of
			// equal or higher priority are nominated to it (they wait
			// there for victims of their preemption to go): with them
			// as if they ran there, and without.
			if on, with := s.withNominated(pod, node.Name, running, vols); len(on) > len(running) {
				v = fitsAll(pod, node, on, with, overLimit, newAcrossNodes(pod, sn.with(node.Name, on)))
			}
		}
		if v.fits() {
			feasible = append(feasible, node)
			continue
		}
		verdicts[node.Name] = v
	}
	if len(feasible) == 0 {
		return nil, verdicts, nil
	}
	in := scoreInput{snapshot: sn, defaultSelector: s.defaultSelector(pod), volumeScore: s.volumeScorer(vols)}
	return selectNode(pod, feasible, in), nil, nil
}

// defaultSelector selects the pods of the pod's workload, for the system
// default spread constraints (the real helper.DefaultSelector): the
// selector of the ReplicaSet or StatefulSet that controls it. (The
// selectors of Services and ReplicationControllers that the real one adds
// are none here: csisim serves neither kind.)
func (s *Scheduler) defaultSelector(pod *corev1.Pod) labels.Selector {
	sel := labels.Set{}.AsSelector()
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || owner.APIVersion != appsv1.SchemeGroupVersion.String() {
		return sel
	}
	var ls *metav1.LabelSelector
	switch owner.Kind {
	case "ReplicaSet":
		if rs, err := s.replicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			ls = rs.Spec.Selector
		}
	case "StatefulSet":
		if ss, err := s.statefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			ls = ss.Spec.Selector
		}
	}
	if other, err := metav1.LabelSelectorAsSelector(ls); err == nil && ls != nil {
		if reqs, ok := other.Requirements(); ok {
			sel = sel.Add(reqs...)
		}
	}
	return sel
}

// withNominated adds to a node's pods those nominated to it with a
// priority not lower than pod's, and counts them as users of the pod's
// ReadWriteOncePod claims they use.
func (s *Scheduler) withNominated(pod *corev1.Pod, node string, running []*corev1.Pod, vols podVolumes) ([]*corev1.Pod, podVolumes) {
	priority := corev1helpers.PodPriority(pod)
	on := slices.Clone(running)
	for _, p := range s.unscheduled() {
		if p.UID == pod.UID || p.Status.NominatedNodeName != node || p.DeletionTimestamp != nil || corev1helpers.PodPriority(p) < priority {
			continue
		}
		on = append(on, p)
		if p.Namespace != pod.Namespace {
			continue
		}
		for _, c := range vols.readWriteOncePodClaims {
			if usesClaim(p, c) {
				vols.readWriteOncePodUsers = append(slices.Clone(vols.readWriteOncePodUsers), p)
				vols.readWriteOncePodInUse = true
				break
			}
		}
	}
	return on, vols
}

// noFit handles a pod that fits on no node: preemption is tried (the
// PostFilter), and the attempt reported — a FailedScheduling event (its
// message ends with the preemption's outcome) and
// the PodScheduled condition in the real words, and with a preemption
// that nominated a node, status.nominatedNodeName and the victims'
// eviction.
func (s *Scheduler) noFit(ctx context.Context, pod *corev1.Pod, vols podVolumes, verdicts map[string]verdict) error {
	nodes := s.allNodes()
	if len(nodes) == 0 {
		return s.unschedulable(ctx, pod, "no nodes available to schedule pods", nil)
	}
	plugins := map[string]bool{}
	var all []verdict
	for _, n := range nodes {
		if v, ok := verdicts[n.Name]; ok {
			all = append(all, v)
			plugins[v.plugin] = true
		}
	}
	p := s.preempt(pod, vols, nodes, verdicts)
	msg := failureMessage(len(nodes), all, p.postscript)
	if p.node == "" {
		return s.unschedulable(ctx, pod, msg, plugins)
	}
	if err := s.evict(ctx, pod, p.node, p.victims); err != nil {
		return err
	}
	s.events.Event(pod, corev1.EventTypeWarning, "FailedScheduling", msg)
	if err := s.setNominated(ctx, pod, msg, p.node); err != nil {
		return err
	}
	s.parked(pod.Namespace+"/"+pod.Name, plugins)
	return controller.RequeueAfter(podMaxInUnschedulablePodsDuration)
}

// unscheduled are the pods waiting for a node.
func (s *Scheduler) unscheduled() []*corev1.Pod {
	pods, _ := volumeutil.ByIndex[*corev1.Pod](s.podIndex, volumeutil.PodsByNode, "")
	return pods
}

// runningOn are the pods bound to the node that have not finished.
func (s *Scheduler) runningOn(node string) []*corev1.Pod {
	var out []*corev1.Pod
	on, _ := volumeutil.ByIndex[*corev1.Pod](s.podIndex, volumeutil.PodsByNode, node)
	for _, p := range on {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

func hasCondition(pod *corev1.Pod, c corev1.PodCondition) bool {
	for _, have := range pod.Status.Conditions {
		if have.Type == c.Type {
			return have.Status == c.Status && have.Reason == c.Reason && have.Message == c.Message
		}
	}
	return false
}

func setCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
