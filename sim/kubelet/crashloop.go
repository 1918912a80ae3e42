package kubelet

// Containers whose process exits soon after it starts (Config.ContainerExits:
// a sidecar of a driver's deployment whose flags stop its binary) and their
// restarts — models kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go
// doBackOff with the kubelet's crash-loop backoff (pkg/kubelet/kubelet.go
// newCrashLoopBackOff: 10s doubling to MaxContainerBackOff, 5m, with
// KubeletCrashLoopBackOffMax at its default; client-go
// util/flowcontrol/backoff.go) and the statuses of
// pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses. A container
// runs until its process exits (at once, for a refused flag); PLEG's next
// relist (1s on) sees it exited and
// the pod is synced: the first time it is started again at once, after that
// it waits its backoff from when it exited, shown as waiting
// CrashLoopBackOff with the BackOff event, and is started again when the
// backoff has passed. Each step is a timer of the pod's sync, not a poll.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/controller"
)

// The kubelet's crash-loop backoff (kubernetes pkg/kubelet/kubelet.go
// initialCrashLoopBackOff; MaxContainerBackOff of k8s.io/kubelet
// config/v1beta1, the default MaxContainerRestartPeriod).
const (
	crashLoopBackOffInitial = 10 * time.Second
	crashLoopBackOffMax     = 300 * time.Second
)

// The words of a crash loop: the waiting reason (ErrCrashLoopBackOff,
// pkg/kubelet/container/sync_result.go), the event's reason
// (events.BackOffStartContainer) and containerd's reason for a container
// that exited with a status other than 0.
const (
	reasonCrashLoopBackOff = "CrashLoopBackOff"
	reasonBackOff          = "BackOff"
	reasonError            = "Error"
)

// ContainerExit is how a container's process ends once started.
type ContainerExit struct {
	// Code is its exit status, After how long it runs before it exits.
	Code  int32
	After time.Duration
	// Stderr are the lines it writes before it exits: its log.
	Stderr []OutputLine
}

// OutputLine is a line a process writes, After its start.
type OutputLine struct {
	After time.Duration
	Text  string
}

// crashLoop is a container whose process exits at start, with what the
// kubelet keeps of it.
type crashLoop struct {
	exit ContainerExit
	// restarts is its restartCount; last the run that exited last and
	// before the one before it (lastState while last is the state).
	restarts     int32
	last, before *corev1.ContainerStateTerminated
	// exited is when the last run exited, as the runtime has it (the
	// status shows it in seconds).
	exited time.Time
	// backoff and backoffAt are the backoff's entry for the container
	// (its delay and lastUpdate); none while backoff is 0.
	backoff   time.Duration
	backoffAt time.Time
	// running: its run started at started and has not exited yet.
	running bool
	started time.Time
	// waiting: in its backoff, shown as CrashLoopBackOff until next.
	waiting bool
	// next is when the pod worker looks at it again: its run's exit, the
	// relist after it exited, or the end of its backoff.
	next time.Time
}

// crashView is what the pod's status shows of a crash-looping container.
type crashView struct {
	state, last corev1.ContainerState
	restarts    int32
	id          string
	// running: ready and started, as a container without probes is.
	running bool
}

// containerExit asks Config.ContainerExits how container c of pod ends at
// start; nil if it runs. Only a container the kubelet restarts whatever
// its exit (restartPolicy Always) crash-loops here.
func (k *Kubelet) containerExit(pod *corev1.Pod, c *corev1.Container) *ContainerExit {
	if k.cfg.ContainerExits == nil || pod.Spec.RestartPolicy != "" && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		return nil
	}
	return k.cfg.ContainerExits(pod, c, k.clock.Now())
}

// runExiting records the start of container c (its first run) whose
// process exits after a while, or at once.
func (k *Kubelet) runExiting(pod *corev1.Pod, pc *podContainers, c *corev1.Container, exit *ContainerExit) error {
	if pc.crashing == nil {
		pc.crashing = map[string]*crashLoop{}
	}
	cl := &crashLoop{exit: *exit}
	pc.crashing[c.Name] = cl
	return k.run(pod, c, cl)
}

// run starts a run of a crash-looping container now; one that exits at
// once exits here.
func (k *Kubelet) run(pod *corev1.Pod, c *corev1.Container, cl *crashLoop) error {
	now := k.clock.Now()
	cl.running, cl.started, cl.waiting, cl.next = true, now, false, now.Add(cl.exit.After)
	if cl.exit.After > 0 {
		return nil
	}
	return k.exited(pod, c, cl)
}

// exited ends the container's run: it has written its output (the log of
// that run) and exited now.
func (k *Kubelet) exited(pod *corev1.Pod, c *corev1.Container, cl *crashLoop) error {
	now := k.clock.Now()
	id := runContainerID(pod.UID, c.Name, cl.restarts)
	t := &corev1.ContainerStateTerminated{ExitCode: cl.exit.Code, StartedAt: metav1.NewTime(cl.started).Rfc3339Copy(),
		FinishedAt: metav1.NewTime(now).Rfc3339Copy(), ContainerID: id}
	if cl.exit.Code != 0 {
		t.Reason = reasonError
	}
	if c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && cl.exit.Code != 0 {
		t.Message = fallbackMessage(cl.exit.Stderr)
	}
	cl.before, cl.last, cl.exited = cl.last, t, now
	cl.running, cl.next = false, now.Add(plegRelistPeriod)
	return k.writeRunLog(pod, c.Name, cl.restarts, cl.started, cl.exit.Stderr)
}

// fallbackMessage is the termination message of FallbackToLogsOnError:
// the log's last lines, at most 80 of them and 2048 bytes (kubernetes
// pkg/kubelet/kuberuntime/kuberuntime_container.go kubeContainerStatus).
func fallbackMessage(out []OutputLine) string {
	if len(out) > 80 {
		out = out[len(out)-80:]
	}
	lines := make([]string, len(out))
	for i, l := range out {
		lines[i] = l.Text
	}
	msg := strings.Join(lines, "\n") + "\n"
	if len(msg) > 2048 {
		msg = msg[len(msg)-2048:]
	}
	return msg
}

// stepCrashLoops moves each crash-looping container of the pod whose time
// has come: a run exits; in its backoff it waits (CrashLoopBackOff, the
// BackOff event), past it (or at its first exit) it runs again. The pod's
// status is posted if one moved.
func (k *Kubelet) stepCrashLoops(ctx context.Context, pod *corev1.Pod) error {
	pc, ok := k.podWorkers.containers.get(pod.UID)
	if !ok || len(pc.crashing) == 0 {
		return nil
	}
	now := k.clock.Now()
	moved := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cl := pc.crashing[c.Name]
		if cl == nil || now.Before(cl.next) {
			continue
		}
		moved = true
		if cl.running {
			if err := k.exited(pod, c, cl); err != nil {
				return err
			}
			continue
		}
		finished := cl.exited
		if cl.inBackOff(finished, now) {
			cl.waiting, cl.next = true, finished.Add(cl.backoff)
			k.events.Eventf(containerRef(pod, "spec.containers", c.Name), corev1.EventTypeWarning, reasonBackOff,
				"Back-off restarting failed container %s in pod %s", c.Name, podDescription(pod))
			continue
		}
		cl.nextBackOff(finished, now)
		cl.restarts++
		if err := k.run(pod, c, cl); err != nil {
			return err
		}
		k.containerEvents(pod, containerStart{field: "spec.containers", c: c})
	}
	if !moved {
		return nil
	}
	ip, err := k.sandboxIP(pod)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return k.postPodStatus(ctx, pod, pc.sandbox(ip))
}

// inBackOff is flowcontrol.Backoff's IsInBackOffSince for the container's
// entry: it has one that has not expired, and less than its delay has
// passed since the container exited.
func (cl *crashLoop) inBackOff(finished, now time.Time) bool {
	return cl.backoff > 0 && !backOffExpired(finished, cl.backoffAt) && now.Sub(finished) < cl.backoff
}

// nextBackOff is flowcontrol.Backoff's Next (without jitter, as the
// kubelet makes it): a new or expired entry starts at the initial delay,
// else the delay doubles up to the maximum.
func (cl *crashLoop) nextBackOff(finished, now time.Time) {
	if cl.backoff == 0 || backOffExpired(finished, cl.backoffAt) {
		cl.backoff = crashLoopBackOffInitial
	} else {
		cl.backoff = min(2*cl.backoff, crashLoopBackOffMax)
	}
	cl.backoffAt = now
}

// backOffExpired: an entry last updated at lastUpdate is forgotten once
// twice the maximum delay has passed by eventTime (flowcontrol.Backoff
// hasExpired).
func backOffExpired(eventTime, lastUpdate time.Time) bool {
	return eventTime.Sub(lastUpdate) > 2*crashLoopBackOffMax
}

// crashLoopWait is how long until a crash-looping container of the pod
// is looked at again; false if none is.
func (k *Kubelet) crashLoopWait(pod *corev1.Pod) (time.Duration, bool) {
	pc, ok := k.podWorkers.containers.get(pod.UID)
	if !ok || len(pc.crashing) == 0 {
		return 0, false
	}
	var next time.Time
	for _, cl := range pc.crashing {
		if next.IsZero() || cl.next.Before(next) {
			next = cl.next
		}
	}
	return max(next.Sub(k.clock.Now()), 0), true
}

// withCrashLoops has the pod synced again by the time a crash-looping
// container of it is due, whatever else the sync asks for (err): a
// failure keeps its own backoff.
func (k *Kubelet) withCrashLoops(pod *corev1.Pod, err error) error {
	wait, ok := k.crashLoopWait(pod)
	if !ok {
		return err
	}
	var again controller.RequeueAfter
	switch {
	case err == nil:
		return controller.RequeueAfter(wait)
	case errors.As(err, &again):
		return controller.RequeueAfter(min(wait, time.Duration(again)))
	}
	return err
}

// view is what the status shows of the container now: running, with the
// last run as its last state; waiting in its backoff, with the last run
// as its last state; or the last run terminated, with the one before as
// its last state.
func (cl *crashLoop) view(pod *corev1.Pod, name string) crashView {
	v := crashView{restarts: cl.restarts}
	if cl.running {
		v.running, v.id = true, runContainerID(pod.UID, name, cl.restarts)
		v.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cl.started).Rfc3339Copy()}}
		if cl.last != nil {
			v.last = corev1.ContainerState{Terminated: cl.last.DeepCopy()}
		}
		return v
	}
	v.id = cl.last.ContainerID
	if cl.waiting {
		v.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", cl.backoff, name, podDescription(pod))}}
		v.last = corev1.ContainerState{Terminated: cl.last.DeepCopy()}
		return v
	}
	v.state = corev1.ContainerState{Terminated: cl.last.DeepCopy()}
	if cl.before != nil {
		v.last = corev1.ContainerState{Terminated: cl.before.DeepCopy()}
	}
	return v
}

// podDescription is how the kubelet names a pod in its messages,
// name_namespace(uid) (kubernetes pkg/kubelet/util/format/pod.go).
func podDescription(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
