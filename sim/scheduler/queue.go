package scheduler

// The queue of pods to schedule: which events bring a pod back, and how a pod
// that did not fit waits, as in the real scheduler's unschedulable pods.

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

func (s *Scheduler) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		s.queue.Add(key)
	}
}

// requeueWhere moves the waiting pods that failed and that want says an
// event concerns back to the queue; with waiting, also the pods that have
// not failed but wait for their claims to be bound.
func (s *Scheduler) requeueWhere(waiting bool, want func(*corev1.Pod, attempt) bool) {
	for _, p := range s.unscheduled() {
		if p.DeletionTimestamp != nil {
			continue
		}
		key := p.Namespace + "/" + p.Name
		s.mu.Lock()
		a, failed := s.attempts[key]
		s.mu.Unlock()
		if failed && want(p, a) || !failed && waiting {
			s.requeue(key)
		}
	}
}

// sharesClaim: the two pods use a claim of the same name.
func sharesClaim(a, b *corev1.Pod) bool {
	for i := range a.Spec.Volumes {
		if name, ok := volumeutil.ClaimName(a, &a.Spec.Volumes[i]); ok && usesClaim(b, name) {
			return true
		}
	}
	return false
}

func usesClaim(pod *corev1.Pod, claim string) bool {
	for i := range pod.Spec.Volumes {
		if name, ok := volumeutil.ClaimName(pod, &pod.Spec.Volumes[i]); ok && name == claim {
			return true
		}
	}
	return false
}

// enqueueFitting moves the waiting pods that fit on a new or changed node
// back to the queue.
func (s *Scheduler) enqueueFitting(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	var sn snapshot
	for _, p := range s.unscheduled() {
		if p.DeletionTimestamp != nil {
			continue
		}
		vols, why := s.podVolumes(p)
		if why != "" {
			continue
		}
		if sn.pods == nil {
			sn = s.snapshot()
		}
		wanted := s.podCSIVolumes(p)
		overLimit := func(n *corev1.Node) bool { return s.overVolumeLimit(n, wanted) }
		if fitsAll(p, node, s.runningOn(node.Name), vols, overLimit, newAcrossNodes(p, sn)).fits() {
			s.requeue(p.Namespace + "/" + p.Name)
		}
	}
}

// assignedPodGone: a pod bound to a node that goes (or finishes) may leave
// room on its node, free a ReadWriteOncePod claim (VolumeRestrictions'
// hint: a pod of the namespace that used one of the waiting pod's
// claims), or end an anti-affinity or a skew.
func (s *Scheduler) assignedPodGone(p *corev1.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	s.requeueWhere(false, func(w *corev1.Pod, a attempt) bool {
		return a.plugins["NodeVolumeLimits"] || a.plugins["NodeResourcesFit"] ||
			a.plugins["VolumeRestrictions"] && w.Namespace == p.Namespace && sharesClaim(w, p) ||
			a.plugins["InterPodAffinity"] || a.plugins["PodTopologySpread"]
	})
}

// podAssigned: a pod bound to a node may be what a waiting pod's affinity
// asks for, or even out a spread (the two plugins' hints on an assigned
// pod's add).
func (s *Scheduler) podAssigned() {
	s.requeueWhere(false, func(_ *corev1.Pod, a attempt) bool {
		return a.plugins["InterPodAffinity"] || a.plugins["PodTopologySpread"]
	})
}

// finished: the pod has succeeded or failed.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// requeue adds a pod to the queue once its backoff since its last failed
// attempt is over.
func (s *Scheduler) requeue(key string) {
	s.mu.Lock()
	a, failed := s.attempts[key]
	s.mu.Unlock()
	if failed {
		if wait := retryAt(a).Sub(s.clock.Now()); wait > 0 {
			s.queue.AddAfter(key, wait)
			return
		}
	}
	s.queue.Add(key)
}

// podChanged: an update of the pod other than of its status (and of the
// bookkeeping fields that change with every write).
func podChanged(old, pod *corev1.Pod) bool {
	strip := func(p *corev1.Pod) *corev1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion, c.Generation, c.ManagedFields, c.Status = "", 0, nil, corev1.PodStatus{}
		return c
	}
	return !apiequality.Semantic.DeepEqual(strip(old), strip(pod))
}

// unschedulable reports why the pod fits nowhere — an event and the
// PodScheduled=False condition — and parks it: an event that may make it
// fit requeues it (after its backoff), else it is tried again after
// podMaxInUnschedulablePodsDuration.
func (s *Scheduler) unschedulable(ctx context.Context, pod *corev1.Pod, msg string, plugins map[string]bool) error {
	s.events.Event(pod, corev1.EventTypeWarning, "FailedScheduling", msg)
	if err := s.setScheduledFalse(ctx, pod, corev1.PodReasonUnschedulable, msg); err != nil {
		return err
	}
	s.parked(pod.Namespace+"/"+pod.Name, plugins)
	// Events that may make it fit bring it back sooner.
	return controller.RequeueAfter(podMaxInUnschedulablePodsDuration)
}

// parked counts a failed attempt of the pod, rejected by plugins.
func (s *Scheduler) parked(key string, plugins map[string]bool) {
	s.mu.Lock()
	a := s.attempts[key]
	s.attempts[key] = attempt{failures: a.failures + 1, last: s.clock.Now(), plugins: plugins}
	s.mu.Unlock()
}

func (s *Scheduler) forget(key string) {
	s.mu.Lock()
	delete(s.attempts, key)
	delete(s.binding, key)
	s.mu.Unlock()
}

// csiNodeWakes says which waiting pods a CSINode event moves back to the
// queue, as the queueing hints of the plugins that registered for it do
// (kubernetes pkg/scheduler/framework/plugins): a new CSINode (old nil)
// every pod that VolumeBinding or NodeVolumeLimits rejected; an update
// those of NodeVolumeLimits only if a driver's allocatable count grew
// (isSchedulableAfterCSINodeUpdated, nodevolumelimits/csi.go: a driver
// new to the CSINode grows from 0), those of VolumeBinding only if the
// migrated-plugins annotation changed (isSchedulableAfterCSINodeChange,
// volumebinding/volume_binding.go).
func csiNodeWakes(old, cur *storagev1.CSINode) func(*corev1.Pod, attempt) bool {
	if old == nil || cur == nil {
		return func(_ *corev1.Pod, a attempt) bool {
			return a.plugins["VolumeBinding"] || a.plugins["NodeVolumeLimits"]
		}
	}
	count := func(d storagev1.CSINodeDriver) int32 {
		if d.Allocatable == nil || d.Allocatable.Count == nil {
			return 0
		}
		return *d.Allocatable.Count
	}
	before := map[string]int32{}
	for _, d := range old.Spec.Drivers {
		before[d.Name] = count(d)
	}
	grew := slices.ContainsFunc(cur.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return count(d) > before[d.Name] })
	migrated := old.Annotations[corev1.MigratedPluginsAnnotationKey] != cur.Annotations[corev1.MigratedPluginsAnnotationKey]
	return func(_ *corev1.Pod, a attempt) bool {
		return grew && a.plugins["NodeVolumeLimits"] || migrated && a.plugins["VolumeBinding"]
	}
}
