package kubelet

// The pod status the kubelet generates for a deleted pod — models
// kubernetes pkg/kubelet/kubelet.go SyncTerminatingPod (the status
// generated once the containers have stopped, generateAPIPodStatus with
// podIsTerminal, and getPhase in pkg/kubelet/kubelet_pods.go), the
// conditions of a terminal pod (pkg/kubelet/status/generate.go), and the
// status manager's TerminatePod (pkg/kubelet/status/status_manager.go).
// The status manager posts them (status_manager.go) when the pod workers
// ask (pod_workers.go).

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The words of a deleted pod's status, as the real kubelet's.
const (
	// reasonPodCompleted: the reason of the Initialized, Ready and
	// ContainersReady conditions of a Succeeded pod (PodCompleted,
	// kubernetes pkg/kubelet/status/generate.go).
	reasonPodCompleted = "PodCompleted"
	// messageSandboxNotReady: PodReadyToStartContainers=False once the
	// sandbox is stopped (PodSandboxNotReadyMsgSandboxNotReady, kubernetes
	// pkg/kubelet/types/constants.go).
	messageSandboxNotReady = "pod sandbox is not ready"
	// TerminatePod's state of a container that never ran
	// (ContainerReasonStatusUnknown, kubernetes pkg/kubelet/container; the
	// message and exit code are status_manager.go's).
	reasonContainerStatusUnknown = "ContainerStatusUnknown"
	messageContainerNotLocated   = "The container could not be located when the pod was terminated"
	exitCodeContainerNotLocated  = 137
)

// runningSandbox is the pod's sandbox if its containers run (or some of
// them could not start): its address and when they started, from the
// status last posted; nil for a pod that has not started.
func (k *Kubelet) runningSandbox(pod *corev1.Pod) *sandbox {
	old := pod.Status
	if cached, ok := k.statuses.get(pod.UID); ok {
		old = cached
	}
	pc, _ := k.podWorkers.containers.get(pod.UID)
	waiting := pc != nil && len(pc.waiting) > 0 // up, with containers that could not start (containers.go)
	if old.Phase != corev1.PodRunning && !waiting {
		return nil
	}
	sb := &sandbox{}
	var err error
	if sb.ip, err = netip.ParseAddr(old.PodIP); err != nil {
		return nil
	}
	if pc != nil {
		sb.crashed = pc.sandbox(sb.ip).crashed
	}
	if waiting {
		sb.started, sb.waiting = pc.started, pc.waiting
		return sb
	}
	for _, c := range old.ContainerStatuses {
		if r := c.State.Running; r != nil {
			sb.started = r.StartedAt
			return sb
		}
	}
	return nil
}

// stoppedStatus is the status the real kubelet generates for a pod that
// ran, once its containers have stopped. csisim's containers (the
// workload, on a real node too) exit 0 when told to stop: each running
// container is terminated, Completed, and the pod Succeeded (getPhase: a
// terminal pod whose regular containers all exited 0). Its sandbox is
// stopped, it is no longer ready (PodCompleted); its addresses, start time
// and resources stay.
func (k *Kubelet) stoppedStatus(pod *corev1.Pod, old corev1.PodStatus) corev1.PodStatus {
	now := metav1.NewTime(k.clock.Now()).Rfc3339Copy()
	s := *old.DeepCopy()
	s.ObservedGeneration = max(pod.Generation, old.ObservedGeneration)
	if old.Phase != corev1.PodSucceeded {
		// The reason and message of another phase do not carry over.
		s.Phase, s.Reason, s.Message = corev1.PodSucceeded, "", ""
	}
	stop := func(statuses []corev1.ContainerStatus, init bool) {
		for i := range statuses {
			c := &statuses[i]
			if r := c.State.Running; r != nil {
				c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: reasonCompleted,
					StartedAt: r.StartedAt, FinishedAt: now, ContainerID: c.ContainerID}}
				c.Ready, c.Started = false, ptrTo(false)
			} else if !init {
				c.Ready = false
			}
		}
	}
	stop(s.InitContainerStatuses, true)
	stop(s.ContainerStatuses, false)
	cond := func(t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string) corev1.PodCondition {
		return podCondition(pod, old, now, t, status, reason, message)
	}
	s.Conditions = append(otherConditions(pod),
		cond(corev1.PodReadyToStartContainers, corev1.ConditionFalse, reasonPodSandboxNotReady, messageSandboxNotReady),
		cond(corev1.PodInitialized, corev1.ConditionTrue, reasonPodCompleted, ""),
		cond(corev1.PodReady, corev1.ConditionFalse, reasonPodCompleted, ""),
		cond(corev1.ContainersReady, corev1.ConditionFalse, reasonPodCompleted, ""),
		cond(corev1.PodScheduled, corev1.ConditionTrue, "", ""))
	return s
}

// finalStatus is the status manager's TerminatePod: the status last posted
// with every container that has not terminated marked as one that could
// not be located (once the pod has initialized; of init containers, those
// that had begun, or else the first), and a phase that is not terminal
// made Failed. For a pod that ran, its stopped status is final already; a
// pod deleted before it started ends Failed.
func finalStatus(old corev1.PodStatus, hasInit bool) corev1.PodStatus {
	s := *old.DeepCopy()
	unknown := func(c *corev1.ContainerStatus) {
		if c.State.Terminated == nil {
			c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCodeContainerNotLocated,
				Reason: reasonContainerStatusUnknown, Message: messageContainerNotLocated}}
		}
	}
	if !hasInit || initialized(old) {
		for i := range s.ContainerStatuses {
			unknown(&s.ContainerStatuses[i])
		}
	}
	begun := len(s.InitContainerStatuses)
	for begun > 1 && s.InitContainerStatuses[begun-1].State.Waiting != nil {
		begun--
	}
	for i := range begun {
		unknown(&s.InitContainerStatuses[i])
	}
	if s.Phase != corev1.PodSucceeded && s.Phase != corev1.PodFailed {
		s.Phase = corev1.PodFailed
	}
	return s
}

// initialized: a regular container of the pod has left waiting, or its
// last init container has completed (a sidecar: started) — the status
// manager's hasPodInitialized for a pod with init containers.
func initialized(s corev1.PodStatus) bool {
	for _, c := range s.ContainerStatuses {
		if c.State.Waiting == nil || c.LastTerminationState.Terminated != nil {
			return true
		}
	}
	if n := len(s.InitContainerStatuses); n > 0 {
		last := s.InitContainerStatuses[n-1]
		if t := last.State.Terminated; t != nil && t.ExitCode == 0 {
			return true
		}
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	return false
}
