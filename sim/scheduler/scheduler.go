// Package scheduler is the simulated kube-scheduler, reduced for now to
// what the walking skeleton needs: a pod whose claims are all bound goes to
// the first Ready node by name, through the pods/binding subresource.
// Topology, WaitForFirstConsumer and volume limits are part 1 of the sim
// issue.
package scheduler

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/csisim/csisim/sim/controller"
)

// Name is the scheduler name pods ask for by default.
const Name = corev1.DefaultSchedulerName

// retryUnschedulable is how soon an unschedulable pod is tried again.
const retryUnschedulable = 100 * time.Millisecond

// Scheduler binds pending pods to nodes.
type Scheduler struct {
	client   kubernetes.Interface
	events   record.EventRecorder
	stopRecs func()
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	claims   corelisters.PersistentVolumeClaimLister
	queue    controller.Queue
	synced   []cache.InformerSynced
}

// New wires a scheduler to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Scheduler {
	events, stop := rt.NewEventRecorder(client, Name, "")
	s := &Scheduler{client: client, events: events, stopRecs: stop, queue: rt.NewQueue("scheduler")}
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	s.pods, s.nodes, s.claims = podInf.Lister(), nodeInf.Lister(), pvcInf.Lister()
	_, _ = podInf.Informer().AddEventHandler(controller.EnqueueHandler(s.queue))
	s.synced = []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced, pvcInf.Informer().HasSynced}
	return s
}

// Run schedules until ctx is done.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.stopRecs()
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return
	}
	controller.RunAll(ctx, s.Workers()...)
}

// Workers are the scheduler's queue and sync function.
func (s *Scheduler) Workers() []controller.Worker {
	return []controller.Worker{{Name: "scheduler", Queue: s.queue, Sync: s.sync}}
}

func (s *Scheduler) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || (pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != Name) {
		return nil
	}
	if reason := s.unboundClaims(pod); reason != "" {
		return controller.RequeueAfter(retryUnschedulable)
	}
	node, err := s.pickNode()
	if err != nil {
		return err
	}
	if node == "" {
		return controller.RequeueAfter(retryUnschedulable)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding pod %s to %s: %w", key, node, err)
	}
	s.events.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
	return nil
}

// unboundClaims says why the pod must wait for its claims, or "".
func (s *Scheduler) unboundClaims(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, err := s.claims.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return fmt.Sprintf("persistentvolumeclaim %q not found", v.PersistentVolumeClaim.ClaimName)
		}
		if claim.Spec.VolumeName == "" {
			return "pod has unbound immediate PersistentVolumeClaims"
		}
	}
	return ""
}

func (s *Scheduler) pickNode() (string, error) {
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		if !n.Spec.Unschedulable && nodeReady(n) {
			return n.Name, nil
		}
	}
	return "", nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
