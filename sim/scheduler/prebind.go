package scheduler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/csisim/csisim/sim/controller"
)

// The VolumeBinding plugin's PreBind: once it has written the claims'
// bindings and selected nodes it polls every second (the first poll a
// second after the writes) until the claims are bound, the provisioner
// gives the claim back (removes its selected node) or bindTimeoutSeconds
// (600 s by default) are over.
const (
	bindPollInterval = time.Second
	bindTimeout      = 600 * time.Second
	// backoffWindow is the backoff queue's ordering window: backoff
	// expiries are truncated to it and the queue is flushed at its ticks.
	backoffWindow = time.Second
)

// preBinding is a pod in the VolumeBinding plugin's PreBind: the node it
// is bound for, when the plugin wrote the bindings, how many polls have
// been made, and the claims it waits for — to be provisioned on the node,
// or bound to the static volumes it chose.
type preBinding struct {
	node      string
	started   time.Time
	polls     int
	provision []string
	static    []staticBinding
}

// staticBinding is a claim and the static volume chosen for it.
type staticBinding struct{ claim, volume string }

// lookup is what a poll reads: the claims of the pod's namespace, the
// volumes and the node, as the scheduler's informers see them.
type lookup struct {
	claim  func(name string) (*corev1.PersistentVolumeClaim, error)
	volume func(name string) (*corev1.PersistentVolume, error)
	node   *corev1.Node
}

// nextPoll is when the plugin next looks at the claims.
func (b preBinding) nextPoll() time.Time {
	return b.started.Add(time.Duration(b.polls+1) * bindPollInterval)
}

// check is one poll of the plugin over the claims: done when all are
// fully bound; an error, worded as the real plugin's, when a claim to
// provision lost its selected node (the provisioner's signal that
// provisioning failed there), a chosen static volume lost its claim, a
// volume does not fit the node, or a claim or volume is gone. A volume a
// claim names that is not there yet is waited for.
func (b preBinding) check(in lookup) (bool, error) {
	done := true
	for _, sb := range b.static {
		pv, err := in.volume(sb.volume)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		claim, err := in.claim(sb.claim)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if !volumeFits(pv, in.node) {
			return false, fmt.Errorf("pv %q node affinity doesn't match node %q: no matching NodeSelectorTerms", pv.Name, in.node.Name)
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
			return false, fmt.Errorf("ClaimRef got reset for pv %q", pv.Name)
		}
		done = done && fullyBound(claim)
	}
	for _, name := range b.provision {
		claim, err := in.claim(name)
		if err != nil {
			return false, fmt.Errorf("failed to check provisioning pvc: %w", err)
		}
		if claim.Annotations == nil {
			return false, fmt.Errorf("selectedNode annotation reset for PVC %q", claim.Name)
		}
		if claim.Annotations[storagehelpers.AnnSelectedNode] != b.node {
			return false, fmt.Errorf("provisioning failed for PVC %q", claim.Name)
		}
		if claim.Spec.VolumeName != "" {
			pv, err := in.volume(claim.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("failed to get pv %q from cache: %w", claim.Spec.VolumeName, err)
			}
			if !volumeFits(pv, in.node) {
				return false, fmt.Errorf("pv %q node affinity doesn't match node %q: no matching NodeSelectorTerms", pv.Name, in.node.Name)
			}
		}
		done = done && fullyBound(claim)
	}
	return done, nil
}

func fullyBound(claim *corev1.PersistentVolumeClaim) bool {
	return claim.Spec.VolumeName != "" && metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted)
}

// preBindError is how the framework words a PreBind failure of the
// VolumeBinding plugin.
func preBindError(err error) string {
	return fmt.Sprintf("running PreBind plugin %q: binding volumes: %v", "VolumeBinding", err)
}

// startPreBind records that the pod waits in PreBind for its claims, from
// now, and asks for the first poll.
func (s *Scheduler) startPreBind(key string, b preBinding) error {
	b.started = s.clock.Now()
	s.mu.Lock()
	s.binding[key] = b
	s.mu.Unlock()
	return controller.RequeueAfter(bindPollInterval)
}

// pollPreBind runs the poll that is due, if one is: it binds the pod once
// its claims are bound, fails the attempt when the provisioning failed or
// the bind timeout is over, and otherwise waits for the next poll. Syncs
// between polls (claim updates wake the pod) only wait for the next poll,
// as the real plugin only looks at its ticks.
func (s *Scheduler) pollPreBind(ctx context.Context, pod *corev1.Pod, b preBinding) error {
	key := pod.Namespace + "/" + pod.Name
	now := s.clock.Now()
	if next := b.nextPoll(); now.Before(next) {
		return controller.RequeueAfter(next.Sub(now))
	}
	if now.Sub(b.started) >= bindTimeout {
		return s.schedulerError(ctx, pod, preBindError(context.DeadlineExceeded))
	}
	b.polls = int(now.Sub(b.started) / bindPollInterval)
	node, err := s.nodes.Get(b.node)
	if err != nil {
		return s.schedulerError(ctx, pod, preBindError(fmt.Errorf("failed to get node %q: %w", b.node, err)))
	}
	done, err := b.check(lookup{claim: s.claims.PersistentVolumeClaims(pod.Namespace).Get, volume: s.volumes.Get, node: node})
	if err != nil {
		return s.schedulerError(ctx, pod, preBindError(err))
	}
	if !done {
		s.mu.Lock()
		s.binding[key] = b
		s.mu.Unlock()
		return controller.RequeueAfter(b.nextPoll().Sub(now))
	}
	return s.bind(ctx, pod, b.node)
}

// schedulerError is the real scheduler's handling of an attempt that
// failed with an error rather than finding no node (here: in PreBind): a
// FailedScheduling event, PodScheduled=False with reason SchedulerError,
// and the pod goes straight to the backoff queue, whatever happens
// meanwhile, backing off by its consecutive errors.
func (s *Scheduler) schedulerError(ctx context.Context, pod *corev1.Pod, msg string) error {
	key := pod.Namespace + "/" + pod.Name
	s.events.Event(pod, corev1.EventTypeWarning, "FailedScheduling", msg)
	if err := s.setScheduledFalse(ctx, pod, corev1.PodReasonSchedulerError, msg); err != nil {
		// As the real scheduler, go on: the pod backs off all the same.
		klog.FromContext(ctx).Error(err, "Error updating pod", "pod", klog.KObj(pod))
	}
	s.mu.Lock()
	delete(s.binding, key)
	a := s.attempts[key]
	a.errors++
	a.last, a.plugins = s.clock.Now(), nil
	s.attempts[key] = a
	s.mu.Unlock()
	return controller.RequeueAfter(retryAt(a).Sub(s.clock.Now()))
}

// setScheduledFalse sets the pod's PodScheduled=False condition, unless it
// already says the same.
func (s *Scheduler) setScheduledFalse(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason,
		Message: msg, LastTransitionTime: metav1.NewTime(s.clock.Now()).Rfc3339Copy()}
	if hasCondition(pod, cond) {
		return nil
	}
	p := pod.DeepCopy()
	setCondition(p, cond)
	if _, err := s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting PodScheduled=False (%s) on pod %s/%s: %w", reason, pod.Namespace, pod.Name, err)
	}
	return nil
}

// retryAt is when a pod that failed comes out of the backoff queue: its
// backoff (1 s doubling to 10 s, by its consecutive errors after an error,
// else by its unschedulable attempts) from the failure, truncated to the
// queue's 1 s ordering window, and out at the window after that one.
func retryAt(a attempt) time.Time {
	count := a.failures
	if a.errors > 0 {
		count = a.errors
	}
	backoff := maxBackoff
	if shift := count - 1; shift < 8 && initialBackoff<<shift < maxBackoff {
		backoff = initialBackoff << max(shift, 0)
	}
	return a.last.Add(backoff).Truncate(backoffWindow).Add(backoffWindow)
}
