package kubelet

// The pod worker's sync of a pod it can start, up to its containers —
// models kubernetes pkg/kubelet/kubelet.go SyncPod, which posts the pod's
// status (status_generate.go, status_manager.go) and then waits for its
// volumes (WaitForAttachAndMount, pkg/kubelet/volumemanager/
// volume_manager.go) while the volume manager sets them up (populator.go,
// reconciler.go).
//
// The pod worker gives up waiting after podAttachAndMountTimeout and tries
// again after its backoff; in between it starts nothing, even if the
// volume manager (setUp here) has meanwhile mounted everything. v1.37
// records no event for such a timeout: wait.Interrupted filters it out in
// SyncPod (pkg/kubelet/kubelet.go). The "Unable to attach or mount
// volumes" FailedMount event comes only when the volume manager could not
// process a volume at all (a missing or unbound claim, a PV that is not
// the claim's), once per attempt.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/controller"
)

// The pod worker's timing around a pod's volumes.
const (
	// podAttachAndMountTimeout bounds one WaitForAttachAndMount, and
	// podAttachAndMountRetryInterval is how often it looks (kubernetes
	// pkg/kubelet/volumemanager/volume_manager.go).
	podAttachAndMountTimeout       = 2*time.Minute + 3*time.Second
	podAttachAndMountRetryInterval = 300 * time.Millisecond
	// podWorkerBackOff is how long the pod worker waits after a SyncPod
	// that failed (backOffPeriod, kubernetes pkg/kubelet/kubelet.go). The
	// real one adds up to half of it again at random
	// (workerBackOffPeriodJitterFactor, pod_workers.go); left out, so that
	// a seed gives one run.
	podWorkerBackOff = 10 * time.Second
)

// failedMountVolume is the event's reason (events.FailedMountVolume,
// kubernetes pkg/kubelet/events/event.go).
const failedMountVolume = "FailedMount"

// podSync is one pod's pod worker while the pod waits for its volumes.
type podSync struct {
	// start is when the current attempt (a SyncPod and its
	// WaitForAttachAndMount) began.
	start time.Time
	// retryAt is set when the last attempt failed: the pod worker backs
	// off until then.
	retryAt time.Time
	// processed: the volume manager has taken the pod's volumes in during
	// this attempt (its populator looks once per attempt).
	processed bool
	// unprocessed: the last attempt failed as the volume manager could
	// not take all of the pod's volumes in.
	unprocessed bool
	// seeAt is when this attempt sees the pod's volumes mounted; zero
	// until they are.
	seeAt time.Time
}

// roll brings the pod worker's attempts up to now: an attempt that has
// outlived podAttachAndMountTimeout ended (silently, unless the node's
// attach limit is why: attach_limit.go), and one begins where a backoff
// ends. It reports whether an attempt ended so.
func (s *podSync) roll(now time.Time) (timedOut bool) {
	for {
		if !s.retryAt.IsZero() {
			if now.Before(s.retryAt) {
				return timedOut
			}
			*s = podSync{start: s.retryAt}
			continue
		}
		deadline := s.start.Add(podAttachAndMountTimeout)
		if now.Before(deadline) {
			return timedOut
		}
		s.retryAt, timedOut = deadline.Add(podWorkerBackOff), true
	}
}

// failed ends the attempt at now: the pod worker tries again after its
// backoff. unprocessed: because of volumes the populator could not take in.
func (s *podSync) failed(now time.Time, unprocessed bool) {
	s.retryAt, s.unprocessed = now.Add(podWorkerBackOff), unprocessed
}

// attempt is the pod's current attempt, brought up to now; the first one
// begins at now. timedOut: an attempt timed out meanwhile.
func (w *podWorkers) attempt(uid types.UID, now time.Time) (out podSync, timedOut bool) {
	w.attempts.do(func(attempts map[types.UID]*podSync) {
		s := attempts[uid]
		if s == nil {
			s = &podSync{start: now}
			attempts[uid] = s
		}
		timedOut = s.roll(now)
		out = *s
	})
	return out, timedOut
}

// updateAttempt applies f to the pod's current attempt, if it has one.
func (w *podWorkers) updateAttempt(uid types.UID, f func(*podSync)) {
	w.attempts.do(func(attempts map[types.UID]*podSync) {
		if s := attempts[uid]; s != nil {
			f(s)
		}
	})
}

// syncPendingPod is the real kubelet's SyncPod for a pod it can start, up
// to its containers: post the pod's status, then wait for its volumes to
// be attached and mounted. It returns nil once they are and the pod
// worker would go on to start the containers.
func (k *Kubelet) syncPendingPod(ctx context.Context, pod *corev1.Pod) error {
	now := k.clock.Now()
	k.forgetGonePods()
	s, timedOut := k.podWorkers.attempt(pod.UID, now)
	if timedOut {
		if rejected, err := k.rejectForAttachLimit(ctx, pod); rejected || err != nil {
			return errors.Join(err, errPodRejected)
		}
	}

	if err := k.postPodStatus(ctx, pod, nil); err != nil {
		return err
	}
	switch {
	case !s.retryAt.IsZero() && s.unprocessed:
		// The populator takes the pod in again only when the next attempt
		// asks it to: nothing is set up meanwhile.
		return controller.RequeueAfter(s.retryAt.Sub(now))
	case !s.retryAt.IsZero():
		return k.setUpWhileBackingOff(ctx, pod, s.retryAt.Sub(now))
	}
	p := k.processVolumes(pod)
	if !s.processed {
		// The populator takes the pod in after the attempt began; the
		// first look that finds its errors is podAttachAndMountRetryInterval
		// after it.
		look := s.start.Add(podAttachAndMountRetryInterval)
		if len(p.errs) > 0 {
			if now.Before(look) {
				return controller.RequeueAfter(look.Sub(now))
			}
			if unmounted := k.unmountedVolumes(pod, p); len(unmounted) > 0 {
				k.events.Eventf(pod, corev1.EventTypeWarning, failedMountVolume,
					"Unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %s",
					unmounted, k.unattachedVolumes(p), p.failed, strings.Join(p.errs, "; "))
				k.podWorkers.updateAttempt(pod.UID, func(s *podSync) { s.failed(now, true) })
				return controller.RequeueAfter(podWorkerBackOff)
			}
		}
		if !now.Before(look) {
			k.podWorkers.updateAttempt(pod.UID, func(s *podSync) { s.processed = true })
		}
	}
	mountedBefore := len(k.unmountedVolumes(pod, p)) == 0
	if err := k.setUp(ctx, pod, false); errors.Is(err, errNotReady) {
		// Woken by what it waits for (wake.go); at the latest, its attempt
		// times out.
		return controller.RequeueAfter(s.start.Add(podAttachAndMountTimeout).Sub(now))
	} else if err != nil {
		return err
	}
	if len(p.expected) == 0 {
		return nil // nothing to wait for: WaitForAttachAndMount returns at once
	}
	// The pod worker sees them at a look of WaitForAttachAndMount: when,
	// is settled the first time they are all mounted in the attempt.
	seeAt := s.seeAt
	if seeAt.IsZero() {
		seeAt = nextLook(s.start, now, mountedBefore)
		k.podWorkers.updateAttempt(pod.UID, func(s *podSync) { s.seeAt = seeAt })
	}
	if seeAt.After(now) {
		return controller.RequeueAfter(seeAt.Sub(now))
	}
	return nil
}

// nextLook is when WaitForAttachAndMount, begun at start, sees that the
// pod's volumes are mounted: at its look at now, or after now if it is
// not one of its looks or if the volumes were mounted only now (the
// volume manager takes its time; the simulated one none).
func nextLook(start, now time.Time, mountedBefore bool) time.Time {
	n := (now.Sub(start) + podAttachAndMountRetryInterval - 1) / podAttachAndMountRetryInterval
	look := start.Add(n * podAttachAndMountRetryInterval)
	if !mountedBefore && look.Equal(now) {
		look = look.Add(podAttachAndMountRetryInterval)
	}
	return look
}

// setUpWhileBackingOff lets the volume manager go on setting up the pod's
// volumes while its pod worker backs off, and has the pod synced again
// when the backoff is over (or sooner, if the volume manager asks).
func (k *Kubelet) setUpWhileBackingOff(ctx context.Context, pod *corev1.Pod, backoff time.Duration) error {
	err := k.setUp(ctx, pod, false)
	var again controller.RequeueAfter
	switch {
	case err == nil:
	case errors.As(err, &again):
		backoff = min(backoff, time.Duration(again))
	default:
		return err
	}
	return controller.RequeueAfter(backoff)
}

// unmountedVolumes are the expected volumes of the pod not mounted for it
// (those the populator did not take in included), sorted, as
// WaitForAttachAndMount's getUnmountedVolumes. Volumes without a claim
// count as mounted: the simulated kubelet has nothing to do for them.
func (k *Kubelet) unmountedVolumes(pod *corev1.Pod, p processed) []string {
	out := []string{}
	for _, name := range p.expected {
		v, ok := p.volumes[name]
		if ok && v.pvName == "" {
			continue
		}
		if m := k.actual.mountedVolume(pod.UID, v.pvName); !ok || m == nil || m.uncertain {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// unattachedVolumes are the volumes the populator took in that need
// attaching and are not yet in the node's volumesAttached, sorted, as
// WaitForAttachAndMount's getUnattachedVolumes.
func (k *Kubelet) unattachedVolumes(p processed) []string {
	var attached []corev1.AttachedVolume
	if node, err := k.nodes.Get(k.cfg.NodeName); err == nil {
		attached = node.Status.VolumesAttached
	}
	out := []string{}
	for name, v := range p.volumes {
		if v.attach && !slices.ContainsFunc(attached, func(a corev1.AttachedVolume) bool { return a.Name == v.unique }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
