package kubelet

// The pod status the kubelet generates for a pod that is not terminating —
// models kubernetes pkg/kubelet/kubelet_pods.go (generateAPIPodStatus,
// convertToAPIContainerStatuses) with the conditions of
// pkg/kubelet/status/generate.go, and what the container runtime
// (containerd) reports of the containers: images, IDs, users. A pod shows
// ContainerCreating while it waits for its volumes, as on a real cluster,
// and Running, with container IDs and a pod IP, once its sandbox and
// containers are up. The status manager posts it (status_manager.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The status's words, as the real kubelet's.
const (
	// Waiting reasons (kubernetes pkg/kubelet/kubelet_pods.go).
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	// Condition reasons (kubernetes pkg/kubelet/status/generate.go).
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	// PodReadyToStartContainers=False before the sandbox exists
	// (kubernetes pkg/kubelet/types/constants.go).
	reasonPodSandboxNotReady = "PodSandboxNotReady"
	messageNoPodSandbox      = "no pod sandbox exists"
	// reasonCompleted is containerd's reason for a container that exited 0.
	reasonCompleted = "Completed"
)

// sandbox is the pod's sandbox and containers once they run.
type sandbox struct {
	ip      netip.Addr
	started metav1.Time
	// waiting: the containers that could not start (containers.go), by
	// name, and why; the pod stays Pending while there are some.
	waiting map[string]corev1.ContainerStateWaiting
	// crashed: the containers whose process exits at start, by name
	// (crashloop.go); the pod runs, restarting them.
	crashed map[string]*crashLoop
}

// generatePodStatus is the status the real kubelet generates for a pod
// that is not terminating, from old (the status it last posted, else the
// pod's), with the sandbox and its containers running when sb is set:
// phase, the kubelet's five conditions after the ones it does not own,
// container statuses, addresses, start time, QoS class and resources.
func (k *Kubelet) generatePodStatus(pod *corev1.Pod, old corev1.PodStatus, sb *sandbox) corev1.PodStatus {
	now := metav1.NewTime(k.clock.Now()).Rfc3339Copy()
	s := corev1.PodStatus{
		Phase:              corev1.PodPending,
		QOSClass:           podQOS(pod),
		ObservedGeneration: max(pod.Generation, old.ObservedGeneration),
		StartTime:          old.StartTime,
	}
	if s.StartTime == nil || s.StartTime.IsZero() {
		s.StartTime = &now
	}
	if sb != nil {
		if len(sb.waiting) == 0 {
			s.Phase = corev1.PodRunning
		}
		s.PodIP = sb.ip.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
	}
	hasInit := len(pod.Spec.InitContainers) > 0
	s.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, true, hasInit, sb)
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, false, hasInit, sb)

	s.Conditions = otherConditions(pod)
	cond := func(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
		if ok {
			return podCondition(pod, old, now, t, corev1.ConditionTrue, "", "")
		}
		return podCondition(pod, old, now, t, corev1.ConditionFalse, reason, message)
	}
	initMessage, readyMessage := unreadyMessages(pod, s.InitContainerStatuses, s.ContainerStatuses)
	s.Conditions = append(s.Conditions,
		cond(corev1.PodReadyToStartContainers, sb != nil, reasonPodSandboxNotReady, messageNoPodSandbox),
		cond(corev1.PodInitialized, initMessage == "", reasonContainersNotInitialized, initMessage),
		cond(corev1.PodReady, readyMessage == "", reasonContainersNotReady, readyMessage),
		cond(corev1.ContainersReady, readyMessage == "", reasonContainersNotReady, readyMessage),
		cond(corev1.PodScheduled, true, "", ""))

	if ip := k.hostIP(); ip != "" {
		s.HostIP = ip
		s.HostIPs = []corev1.HostIP{{IP: ip}}
	}
	// Pod-level resources (InPlacePodLevelResourcesVerticalScaling, beta
	// and on in v1.37): what the pod asks for in all.
	opts := resourcehelper.PodResourcesOptions{}
	s.Resources = &corev1.ResourceRequirements{Requests: nonEmpty(resourcehelper.PodRequests(pod, opts)),
		Limits: nonEmpty(resourcehelper.PodLimits(pod, opts))}
	s.AllocatedResources = s.Resources.Requests
	return s
}

// waitingFor is the waiting state of a container that could not start
// in the sandbox.
func (sb *sandbox) waitingFor(name string) (corev1.ContainerStateWaiting, bool) {
	if sb == nil {
		return corev1.ContainerStateWaiting{}, false
	}
	w, ok := sb.waiting[name]
	return w, ok
}

// crashLoopOf is the crash loop of a regular container, nil if it has
// none.
func (sb *sandbox) crashLoopOf(name string, init bool) *crashLoop {
	if sb == nil || init {
		return nil
	}
	return sb.crashed[name]
}

// crashedStatus is the status of a crash-looping container: its image and
// its last run's ID as the runtime reports them, its state, last state
// and restarts; not ready, not started.
func crashedStatus(st *corev1.ContainerStatus, pod *corev1.Pod, c corev1.Container, cl *crashLoop) {
	v := cl.view(pod, c.Name)
	image := normalizedImage(c.Image)
	st.Image, st.ImageID, st.ContainerID = image, imageID(image), v.id
	st.User = containerUser(pod, c)
	st.Resources = c.Resources.DeepCopy()
	st.AllocatedResources = nonEmpty(c.Resources.Requests)
	st.State, st.LastTerminationState, st.RestartCount = v.state, v.last, v.restarts
	st.Ready, st.Started = v.running, ptrTo(v.running)
}

// noneRunning: no regular container of the pod started in the sandbox.
func (sb *sandbox) noneRunning(pod *corev1.Pod) bool {
	return len(sb.waiting) > 0 && !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool {
		_, waiting := sb.waiting[c.Name]
		return !waiting
	})
}

func nonEmpty(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	return l
}

// otherConditions are the pod's conditions the kubelet does not own: they
// stay as they are.
func otherConditions(pod *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !kubeletCondition(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// podCondition is one of the kubelet's conditions of the pod, for its
// generation, made now; it keeps its transition time from old while its
// status stays.
func podCondition(pod *corev1.Pod, old corev1.PodStatus, now metav1.Time, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: pod.Generation, LastTransitionTime: now}
	for _, o := range old.Conditions {
		if o.Type == t && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
	}
	return c
}

// kubeletCondition reports whether the kubelet owns a pod condition
// (kubernetes pkg/kubelet/types/pod_status.go, with the v1.37 gates).
func kubeletCondition(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady,
		corev1.PodResizeInProgress, corev1.PodResizePending, corev1.PodReadyToStartContainers, corev1.AllContainersRestarting:
		return true
	}
	return false
}

// sidecar: an init container that runs beside the others.
func sidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// unreadyMessages are the messages of the Initialized and the Ready
// conditions, empty when they are True: init containers that have not
// completed (sidecars that have not started), containers that are not
// ready (sidecars first).
func unreadyMessages(pod *corev1.Pod, inits, containers []corev1.ContainerStatus) (initMessage, readyMessage string) {
	byName := func(list []corev1.ContainerStatus, name string) corev1.ContainerStatus {
		i := slices.IndexFunc(list, func(s corev1.ContainerStatus) bool { return s.Name == name })
		return list[i]
	}
	var incomplete, unready []string
	for _, c := range pod.Spec.InitContainers {
		st := byName(inits, c.Name)
		if sidecar(c) {
			if st.Started == nil || !*st.Started {
				incomplete = append(incomplete, c.Name)
			}
			if !st.Ready {
				unready = append(unready, c.Name)
			}
		} else if !st.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		if !byName(containers, c.Name).Ready {
			unready = append(unready, c.Name)
		}
	}
	// Once a regular container has started, the pod stays initialized.
	if slices.ContainsFunc(containers, func(s corev1.ContainerStatus) bool { return s.Started != nil && *s.Started }) {
		incomplete = nil
	}
	// Messages of kubernetes pkg/kubelet/status/generate.go.
	if len(incomplete) > 0 {
		initMessage = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	if len(unready) > 0 {
		readyMessage = fmt.Sprintf("containers with unready status: %s", unready)
	}
	return initMessage, readyMessage
}

// containerStatuses are the statuses of containers (the pod's init
// containers when init), sorted by name as the kubelet sorts them: waiting
// (ContainerCreating, or PodInitializing in a pod with init containers)
// until the sandbox is up; then init containers completed (sidecars
// running) and containers running.
func containerStatuses(pod *corev1.Pod, containers []corev1.Container, init, hasInit bool, sb *sandbox) []corev1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	waiting := reasonContainerCreating
	if hasInit {
		waiting = reasonPodInitializing
	}
	out := make([]corev1.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptrTo(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}}
		for _, m := range c.VolumeMounts {
			vm := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
			if m.ReadOnly {
				// Recursive read-only as asked for; containerd
				// can do it.
				rro := corev1.RecursiveReadOnlyDisabled
				if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled {
					rro = corev1.RecursiveReadOnlyEnabled
				}
				vm.RecursiveReadOnly = &rro
			}
			st.VolumeMounts = append(st.VolumeMounts, vm)
		}
		if w, ok := sb.waitingFor(c.Name); ok {
			st.State = corev1.ContainerState{Waiting: &w}
		} else if cl := sb.crashLoopOf(c.Name, init); cl != nil {
			crashedStatus(&st, pod, c, cl)
		} else if sb != nil {
			image := normalizedImage(c.Image)
			st.Image, st.ImageID, st.ContainerID = image, imageID(image), containerID(pod.UID, c.Name)
			st.User = containerUser(pod, c)
			st.Resources = c.Resources.DeepCopy()
			st.AllocatedResources = nonEmpty(c.Resources.Requests)
			if init && !sidecar(c) {
				st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: reasonCompleted,
					StartedAt: sb.started, FinishedAt: sb.started, ContainerID: st.ContainerID}}
				st.Ready = true
			} else {
				st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: sb.started}}
				st.Ready, st.Started = true, ptrTo(true)
			}
		}
		out = append(out, st)
	}
	if !init {
		slices.SortFunc(out, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

// normalizedImage is the image reference the runtime reports: a name
// without a registry is Docker Hub's (library/ for a single name), a
// name without tag or digest is :latest.
func normalizedImage(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	first, rest, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = "docker.io/" + name
	} else {
		name = first + "/" + rest
	}
	if hasDigest {
		return name + "@" + digest
	}
	if last := name[strings.LastIndex(name, "/")+1:]; !strings.Contains(last, ":") {
		name += ":latest"
	}
	return name
}

// imageID is the image's repository digest: the image's own if it was
// named by digest, else one made up from the name, the same every run.
func imageID(image string) string {
	if repo, digest, ok := strings.Cut(image, "@"); ok {
		return repo + "@" + digest
	}
	repo := image[:strings.LastIndex(image, ":")]
	sum := sha256.Sum256([]byte(image))
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

// containerID is containerd's ID of a container, made up from the pod and
// the container so that it is the same every run.
func containerID(uid types.UID, name string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + name))
	return "containerd://" + hex.EncodeToString(sum[:])
}

// runContainerID is the ID of a container's run after restarts restarts:
// the first run's is containerID's.
func runContainerID(uid types.UID, name string, restarts int32) string {
	if restarts == 0 {
		return containerID(uid, name)
	}
	return containerID(uid, fmt.Sprintf("%s/%d", name, restarts))
}

// containerUser is the user the runtime reports a container runs as
// (status.user, SupplementalGroupsPolicy GA): its runAsUser and
// runAsGroup (root by default) and, as containerd reports them for an
// image without /etc/group, the group first, then the pod's fsGroup and
// supplemental groups.
func containerUser(pod *corev1.Pod, c corev1.Container) *corev1.ContainerUser {
	var uid, gid int64
	var groups []int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = deref(psc.RunAsUser), deref(psc.RunAsGroup)
		if psc.FSGroup != nil {
			groups = append(groups, *psc.FSGroup)
		}
		groups = append(groups, psc.SupplementalGroups...)
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = *sc.RunAsGroup
		}
	}
	supplemental := []int64{gid}
	for _, g := range groups {
		if !slices.Contains(supplemental, g) {
			supplemental = append(supplemental, g)
		}
	}
	return &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: uid, GID: gid, SupplementalGroups: supplemental}}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// podQOS is the pod's QoS class: the one it has, else BestEffort when no
// container asks for CPU or memory, Guaranteed when every container's
// requests equal its limits for both, else Burstable; pod-level resources,
// when set, decide alone (kubernetes pkg/apis/core/v1/helper/qos).
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	if r := pod.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		return requirementsQOS(*r)
	}
	var qos corev1.PodQOSClass
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		switch q := requirementsQOS(c.Resources); {
		case q == corev1.PodQOSBurstable:
			return q
		case qos == "":
			qos = q
		case qos != q:
			return corev1.PodQOSBurstable
		}
	}
	if qos == "" {
		return corev1.PodQOSBestEffort
	}
	return qos
}

func requirementsQOS(r corev1.ResourceRequirements) corev1.PodQOSClass {
	var qos corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		q := corev1.PodQOSGuaranteed
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			q = corev1.PodQOSBestEffort
		}
		if qos != "" && qos != q {
			return corev1.PodQOSBurstable
		}
		qos = q
	}
	return qos
}

func ptrTo[T any](v T) *T { return &v }
