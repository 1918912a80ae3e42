package kubelet

// What a pod shows while the kubelet sets up its volumes, and once it
// runs, as the real kubelet v1.37 writes it: its pod worker's SyncPod
// posts the pod's status (generateAPIPodStatus, kubernetes
// pkg/kubelet/kubelet_pods.go, with the conditions of
// pkg/kubelet/status/generate.go) before it waits for the volumes
// (WaitForAttachAndMount, pkg/kubelet/volumemanager/volume_manager.go),
// and its status manager patches that status onto the pod when it has
// changed. So a pod shows ContainerCreating while it waits, as on a real
// cluster, and Running, with container IDs and a pod IP, once its sandbox
// and containers are up.
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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/csisim/csisim/sim/attachdetach"
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
	// failedMountVolume is the event's reason (events.FailedMountVolume,
	// kubernetes pkg/kubelet/events/event.go).
	failedMountVolume = "FailedMount"
	// pvcProtectionFinalizer lets a pod start with a claim being deleted
	// (kubernetes pkg/volume/util: PVCProtectionFinalizer).
	pvcProtectionFinalizer = "kubernetes.io/pvc-protection"
)

// defaultPodSubnet is where pods get their addresses when the cluster
// gives the node no subnet: containerd's default CNI bridge network.
const defaultPodSubnet = "10.88.0.0/16"

// NodeNetwork is the network of a cluster's node by its index: its
// InternalIP, in the way of kind's nodes (172.18.0.2 and on), and the
// subnet its pods get their addresses from, the one csisim's real nodes'
// CNI plugin gives the same node (10.88.1.0/24 and on, realnodes).
func NodeNetwork(index int) (nodeIP, podSubnet string) {
	return fmt.Sprintf("172.18.0.%d", index+2), fmt.Sprintf("10.88.%d.0/24", index+1)
}

// nodeAddresses are the addresses the Node reports: the InternalIP, then
// the hostname, as a kubelet without a cloud provider reports them.
func (k *Kubelet) nodeAddresses() []corev1.NodeAddress {
	var out []corev1.NodeAddress
	if k.cfg.NodeIP != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: k.cfg.NodeIP})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: k.cfg.NodeName})
}

// podStatuses is what the kubelet keeps of the pods it starts: its pod
// workers' attempts, the status manager's cache of what it posted, and
// the addresses of the pods' sandboxes. Lives in the kubelet process.
type podStatuses struct {
	mu      sync.Mutex
	syncs   map[types.UID]*podSync
	written map[types.UID]corev1.PodStatus
	ips     map[types.UID]netip.Addr
}

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
// outlived podAttachAndMountTimeout ended (silently), and one begins
// where a backoff ends.
func (s *podSync) roll(now time.Time) {
	for {
		if !s.retryAt.IsZero() {
			if now.Before(s.retryAt) {
				return
			}
			*s = podSync{start: s.retryAt}
			continue
		}
		deadline := s.start.Add(podAttachAndMountTimeout)
		if now.Before(deadline) {
			return
		}
		s.retryAt = deadline.Add(podWorkerBackOff)
	}
}

// failed ends the attempt at now: the pod worker tries again after its
// backoff. unprocessed: because of volumes the populator could not take in.
func (s *podSync) failed(now time.Time, unprocessed bool) {
	s.retryAt, s.unprocessed = now.Add(podWorkerBackOff), unprocessed
}

// sync returns the pod's pod worker, first seen at now.
func (p *podStatuses) sync(uid types.UID, now time.Time) *podSync {
	if p.syncs == nil {
		p.syncs = map[types.UID]*podSync{}
	}
	s := p.syncs[uid]
	if s == nil {
		s = &podSync{start: now}
		p.syncs[uid] = s
	}
	s.roll(now)
	return s
}

// forget drops what is kept of pods no longer here (or being deleted),
// given the pods that are; a new pod under an old name has a UID of its own.
func (p *podStatuses) forget(live map[types.UID]bool) {
	for uid := range p.syncs {
		if !live[uid] {
			delete(p.syncs, uid)
		}
	}
	for uid := range p.written {
		if !live[uid] {
			delete(p.written, uid)
		}
	}
	for uid := range p.ips {
		if !live[uid] {
			delete(p.ips, uid)
		}
	}
}

// restarted forgets what a kubelet process keeps in memory: a new one has
// new pod workers and an empty status cache. The sandboxes (and their
// addresses) outlive it; their addresses are in the pods' status.
func (p *podStatuses) restarted() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncs, p.written, p.ips = nil, nil, nil
}

// livePods are this node's pods that are not being deleted.
func (k *Kubelet) livePods() (map[types.UID]bool, []*corev1.Pod) {
	pods, _ := k.pods.List(labels.Everything())
	live := map[types.UID]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live[p.UID] = true
		}
	}
	return live, pods
}

// syncPendingPod is the real kubelet's SyncPod for a pod it can start, up
// to its containers: post the pod's status, then wait for its volumes to
// be attached and mounted. It returns nil once they are and the pod
// worker would go on to start the containers.
func (k *Kubelet) syncPendingPod(ctx context.Context, pod *corev1.Pod) error {
	now := k.clock.Now()
	live, _ := k.livePods()
	k.podStatus.mu.Lock()
	k.podStatus.forget(live)
	s := *k.podStatus.sync(pod.UID, now)
	k.podStatus.mu.Unlock()

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
				k.updateSync(pod.UID, func(s *podSync) { s.failed(now, true) })
				return controller.RequeueAfter(podWorkerBackOff)
			}
		}
		if !now.Before(look) {
			k.updateSync(pod.UID, func(s *podSync) { s.processed = true })
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
		k.updateSync(pod.UID, func(s *podSync) { s.seeAt = seeAt })
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

func (k *Kubelet) updateSync(uid types.UID, f func(*podSync)) {
	k.podStatus.mu.Lock()
	defer k.podStatus.mu.Unlock()
	if s := k.podStatus.syncs[uid]; s != nil {
		f(s)
	}
}

// reportRunning posts the pod Running: its sandbox has an address, its
// containers have started, and its pod worker no longer waits.
func (k *Kubelet) reportRunning(ctx context.Context, pod *corev1.Pod) error {
	ip, err := k.sandboxIP(pod)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := k.postPodStatus(ctx, pod, &sandbox{ip: ip, started: metav1.NewTime(k.clock.Now()).Rfc3339Copy()}); err != nil {
		return fmt.Errorf("reporting pod %s/%s Running: %w", pod.Namespace, pod.Name, err)
	}
	k.podStatus.mu.Lock()
	delete(k.podStatus.syncs, pod.UID)
	k.podStatus.mu.Unlock()
	return nil
}

// sandbox is the pod's sandbox and containers once they run.
type sandbox struct {
	ip      netip.Addr
	started metav1.Time
}

// postPodStatus generates the pod's status (sb nil: no sandbox yet) and,
// if it differs from what the status manager last posted, patches it onto
// the pod as the status manager does (kubernetes pkg/util/pod/pod.go
// PatchPodStatus): a strategic merge patch of the status subresource from
// the pod's status as the API server has it, with the pod's UID as a
// precondition.
func (k *Kubelet) postPodStatus(ctx context.Context, pod *corev1.Pod, sb *sandbox) error {
	k.podStatus.mu.Lock()
	cached, isCached := k.podStatus.written[pod.UID]
	k.podStatus.mu.Unlock()
	old := pod.Status
	if isCached {
		old = cached
	}
	status := k.generatePodStatus(pod, old, sb)
	if isCached && apiequality.Semantic.DeepEqual(cached, status) {
		return nil
	}
	// The status manager reads the pod again before it patches.
	current, err := k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && current.UID != pod.UID) {
		return nil // gone: nothing to report on
	}
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	patch, unchanged, err := podStatusPatch(pod.UID, current.Status, status)
	if err != nil {
		return err
	}
	if !unchanged {
		if _, err := k.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("patching the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	k.podStatus.mu.Lock()
	if k.podStatus.written == nil {
		k.podStatus.written = map[types.UID]corev1.PodStatus{}
	}
	k.podStatus.written[pod.UID] = status
	k.podStatus.mu.Unlock()
	return nil
}

// podStatusPatch is the patch from old to status; unchanged when it would
// set nothing but the UID.
func podStatusPatch(uid types.UID, old, status corev1.PodStatus) ([]byte, bool, error) {
	from, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, false, err
	}
	to, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: status})
	if err != nil {
		return nil, false, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(from, to, corev1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("pod status patch: %w", err)
	}
	uidOnly, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}})
	if err != nil {
		return nil, false, err
	}
	return patch, string(patch) == string(uidOnly), nil
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
		s.Phase = corev1.PodRunning
		s.PodIP = sb.ip.String()
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
	}
	hasInit := len(pod.Spec.InitContainers) > 0
	s.InitContainerStatuses = containerStatuses(pod, pod.Spec.InitContainers, true, hasInit, sb)
	s.ContainerStatuses = containerStatuses(pod, pod.Spec.Containers, false, hasInit, sb)

	// Conditions the kubelet does not own stay as they are.
	for _, c := range pod.Status.Conditions {
		if !kubeletCondition(c.Type) {
			s.Conditions = append(s.Conditions, c)
		}
	}
	cond := func(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation, LastTransitionTime: now}
		if !ok {
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, reason, message
		}
		// A condition keeps its transition time while its status stays.
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		return c
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

func nonEmpty(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	return l
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
		if sb != nil {
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

// hostIP is the node's address its pods report: its InternalIP, else its
// ExternalIP; none if the Node has neither (as the real kubelet, which
// then leaves it out).
func (k *Kubelet) hostIP() string {
	node, err := k.nodes.Get(k.cfg.NodeName)
	if err != nil {
		return ""
	}
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
	}
	return ""
}

// sandboxIP is the address of the pod's sandbox: the one it has, else the
// lowest free one of the node's pod subnet after the network and gateway
// addresses, as csisim's CNI plugin gives them out on real nodes. An
// address is free when no pod here has it.
func (k *Kubelet) sandboxIP(pod *corev1.Pod) (netip.Addr, error) {
	if a, err := netip.ParseAddr(pod.Status.PodIP); err == nil {
		return a, nil
	}
	live, pods := k.livePods()
	k.podStatus.mu.Lock()
	defer k.podStatus.mu.Unlock()
	k.podStatus.forget(live)
	if a, ok := k.podStatus.ips[pod.UID]; ok {
		return a, nil
	}
	subnet := k.cfg.PodSubnet
	if subnet == "" {
		subnet = defaultPodSubnet
	}
	prefix, err := netip.ParsePrefix(subnet)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("pod subnet %q: %w", subnet, err)
	}
	used := sets.New[netip.Addr]()
	for _, a := range k.podStatus.ips {
		used.Insert(a)
	}
	for _, p := range pods {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			used.Insert(a)
		}
	}
	prefix = prefix.Masked()
	for a := prefix.Addr().Next().Next(); prefix.Contains(a) && prefix.Contains(a.Next()); a = a.Next() {
		if !used.Has(a) {
			if k.podStatus.ips == nil {
				k.podStatus.ips = map[types.UID]netip.Addr{}
			}
			k.podStatus.ips[pod.UID] = a
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address in %s", prefix)
}

// processed is what the volume manager's populator made of a pod's
// volumes: the volumes the pod's containers use, those it took in (with
// their unique names and whether they need attaching), those it could not
// and why.
type processed struct {
	expected []string // pod volume names used by a container
	volumes  map[string]processedVolume
	failed   []string // sorted
	errs     []string // sorted, unique
}

type processedVolume struct {
	pvName string // "" for a volume without a claim
	unique corev1.UniqueVolumeName
	attach bool
}

// processVolumes takes in the pod's volumes as the real populator does
// (kubernetes pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go):
// only those a container mounts or uses as a device; a claim's must be
// bound, not being deleted without protection, to a PV that is bound to
// it, in the volume mode the container uses it in. Its error messages are
// the populator's.
func (k *Kubelet) processVolumes(pod *corev1.Pod) processed {
	mounts, devices := sets.New[string](), sets.New[string]()
	visit := func(c corev1.Container) {
		for _, m := range c.VolumeMounts {
			mounts.Insert(m.Name)
		}
		for _, d := range c.VolumeDevices {
			devices.Insert(d.Name)
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		visit(c)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(corev1.Container(c.EphemeralContainerCommon))
	}
	p := processed{volumes: map[string]processedVolume{}}
	errs := sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		if !mounts.Has(v.Name) && !devices.Has(v.Name) {
			continue // not used: the kubelet leaves it alone
		}
		p.expected = append(p.expected, v.Name)
		pv, err := k.processVolume(pod, v, mounts.Has(v.Name), devices.Has(v.Name))
		if err != nil {
			p.failed = append(p.failed, v.Name)
			errs.Insert(err.Error())
			continue
		}
		p.volumes[v.Name] = pv
	}
	slices.Sort(p.failed)
	p.errs = sets.List(errs)
	return p
}

func (k *Kubelet) processVolume(pod *corev1.Pod, v corev1.Volume, mounted, device bool) (processedVolume, error) {
	claimName := ""
	switch {
	case v.PersistentVolumeClaim != nil:
		claimName = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(pod, &v)
	case v.CSI != nil:
		// Inline: mounted under its own name, never attached (inline.go).
		return processedVolume{pvName: v.Name, unique: inlineUniqueName(pod.UID, v.Name)}, nil
	default:
		return processedVolume{}, nil
	}
	wrap := func(err error) error {
		return fmt.Errorf("error processing PVC %s/%s: %v", pod.Namespace, claimName, err)
	}
	claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(claimName)
	if err != nil {
		// Worded as the API server's answer, which the populator asks.
		if apierrors.IsNotFound(err) {
			err = apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), claimName)
		}
		return processedVolume{}, wrap(fmt.Errorf("failed to fetch PVC from API server: %v", err))
	}
	switch {
	case claim.DeletionTimestamp != nil && !slices.Contains(claim.Finalizers, pvcProtectionFinalizer):
		return processedVolume{}, wrap(errors.New("PVC is being deleted"))
	case claim.Status.Phase != corev1.ClaimBound:
		return processedVolume{}, wrap(errors.New("PVC is not bound"))
	case claim.Spec.VolumeName == "":
		return processedVolume{}, wrap(errors.New("PVC has empty pvc.Spec.VolumeName"))
	}
	if v.Ephemeral != nil {
		if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
			return processedVolume{}, err
		}
	}
	pv, err := k.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = apierrors.NewNotFound(corev1.Resource("persistentvolumes"), claim.Spec.VolumeName)
		}
		return processedVolume{}, wrap(fmt.Errorf("failed to fetch PV %s from API server: %v", claim.Spec.VolumeName, err))
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		return processedVolume{}, wrap(fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pv.Name))
	case pv.Spec.ClaimRef.UID != claim.UID:
		return processedVolume{}, wrap(fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s",
			pv.Name, pv.Spec.ClaimRef.UID, claim.UID))
	}
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	if mounted && mode != corev1.PersistentVolumeFilesystem {
		return processedVolume{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", v.Name, mode)
	}
	if device && mode != corev1.PersistentVolumeBlock {
		return processedVolume{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", v.Name, mode)
	}
	out := processedVolume{pvName: pv.Name}
	if pv.Spec.CSI != nil {
		out.unique = attachdetach.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
		out.attach = k.attachRequired(pv.Spec.CSI.Driver)
	}
	return out, nil
}

// unmountedVolumes are the expected volumes of the pod not mounted for it
// (those the populator did not take in included), sorted. Volumes without
// a claim count as mounted: the simulated kubelet has nothing to do for
// them.
func (k *Kubelet) unmountedVolumes(pod *corev1.Pod, p processed) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := []string{}
	for _, name := range p.expected {
		v, ok := p.volumes[name]
		if ok && v.pvName == "" {
			continue
		}
		if m := k.actual.mounted[pod.UID][v.pvName]; !ok || m == nil || m.uncertain {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// unattachedVolumes are the volumes the populator took in that need
// attaching and are not yet in the node's volumesAttached, sorted.
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

func ptrTo[T any](v T) *T { return &v }
