package kubelet

// Starting a pod's containers once its volumes are mounted: the mounts
// each container is given (makeMounts: subPath bind mounts, subpath.go),
// and what happens when they cannot be made — models kubernetes
// pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer (the
// image is there, then the container's config: a failure there is the
// Warning Failed "Error: <why>" event and the container waiting with
// CreateContainerConfigError) and SyncPod's order (init containers one
// after the other, a failed one stopping the pod there; each regular
// container on its own). The pod worker tries the containers that did
// not start again — once at PLEG's next relist, then after each backoff —
// until the pod is deleted.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/controller"
)

// The waiting reason of a container whose config could not be made
// (ErrCreateContainerConfig, kubernetes
// pkg/kubelet/kuberuntime/kuberuntime_container.go).
const reasonCreateContainerConfigError = "CreateContainerConfigError"

// podContainers is what the kubelet keeps of a pod whose sandbox is up:
// when its containers started, and those that have not (by name, with
// their waiting state).
type podContainers struct {
	started metav1.Time
	waiting map[string]corev1.ContainerStateWaiting
	// workloadRan: the built-in workload has checked the pod's volumes.
	workloadRan bool
	// retryAt: when the pod worker tries the waiting containers again;
	// a sync before (the pod's own status update) starts nothing.
	retryAt time.Time
	// crashing: the containers whose process exits at start, by name
	// (crashloop.go).
	crashing map[string]*crashLoop
}

// sandbox is the pod's sandbox at ip with its containers as they stand.
func (pc *podContainers) sandbox(ip netip.Addr) *sandbox {
	sb := &sandbox{ip: ip, started: pc.started, waiting: pc.waiting}
	for name, cl := range pc.crashing {
		if sb.crashed == nil {
			sb.crashed = map[string]*crashLoop{}
		}
		sb.crashed[name] = cl
	}
	return sb
}

// startContainers starts the pod's containers that have not started
// (all of them the first time), posts the events of each and the pod's
// status, and has the pod synced again while some could not start
// (retryContainersAfter). The workload runs once, before the events, when
// the first regular containers start.
func (k *Kubelet) startContainers(ctx context.Context, pod *corev1.Pod) error {
	ip, err := k.sandboxIP(pod)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	pc, again := k.podWorkers.containers.get(pod.UID)
	now := k.clock.Now()
	if again && now.Before(pc.retryAt) {
		return controller.RequeueAfter(pc.retryAt.Sub(now))
	}
	if !again {
		pc = &podContainers{started: metav1.NewTime(k.clock.Now()).Rfc3339Copy()}
	}
	before := pc.waiting
	pc.waiting = map[string]corev1.ContainerStateWaiting{}
	var tried []containerStart
	var runErr error
	try := func(field string, c *corev1.Container) bool {
		if again && !hasWaiting(before, c.Name) {
			return true // running already
		}
		t := containerStart{field: field, c: c}
		if err := k.makeContainerMounts(ctx, pod, c, ip.String()); err != nil {
			t.failed = err.Error()
			pc.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonCreateContainerConfigError, Message: t.failed}
		} else if exit := k.containerExit(pod, c); exit != nil && field == "spec.containers" {
			runErr = errors.Join(runErr, k.runExiting(pod, pc, c, exit))
		}
		tried = append(tried, t)
		return t.failed == ""
	}
	initialized := true
	for i := range pod.Spec.InitContainers {
		if initialized = try("spec.initContainers", &pod.Spec.InitContainers[i]); !initialized {
			break
		}
	}
	k.notStarted(pod, pc, initialized)
	if initialized {
		for i := range pod.Spec.Containers {
			try("spec.containers", &pod.Spec.Containers[i])
		}
	}
	if runErr != nil {
		return runErr
	}
	if !pc.workloadRan && initialized && len(pc.waiting) < len(pod.Spec.Containers) {
		k.runWorkload(pod)
		pc.workloadRan = true
	}
	for _, t := range tried {
		k.containerEvents(pod, t)
	}
	if len(pc.waiting) > 0 {
		pc.retryAt = now.Add(retryContainersAfter(again))
	}
	k.podWorkers.containers.set(pod.UID, pc)
	if err := k.reportStarted(ctx, pod, pc.sandbox(ip)); err != nil {
		return err
	}
	if len(pc.waiting) > 0 {
		return controller.RequeueAfter(pc.retryAt.Sub(now))
	}
	return nil
}

// retryContainersAfter is when the pod worker syncs a pod whose containers
// could not all start again: the first time at PLEG's next relist, which
// sees the new sandbox and syncs the pod at once (an update ends the pod
// worker's wait); after that only its backoff brings the next sync.
func retryContainersAfter(again bool) time.Duration {
	if again {
		return podWorkerBackOff
	}
	return plegRelistPeriod
}

// containerStart is one container the kubelet tried to start.
type containerStart struct {
	field  string // spec.containers, spec.initContainers
	c      *corev1.Container
	failed string // why its config could not be made; "" if it started
}

// notStarted marks what does not start after a failed init container:
// the init containers after it and every regular container wait
// (PodInitializing).
func (k *Kubelet) notStarted(pod *corev1.Pod, pc *podContainers, initialized bool) {
	if initialized {
		return
	}
	after := false
	for _, c := range pod.Spec.InitContainers {
		if _, failed := pc.waiting[c.Name]; failed {
			after = true
			continue
		}
		if after {
			pc.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonPodInitializing}
		}
	}
	for _, c := range pod.Spec.Containers {
		pc.waiting[c.Name] = corev1.ContainerStateWaiting{Reason: reasonPodInitializing}
	}
}

func hasWaiting(waiting map[string]corev1.ContainerStateWaiting, name string) bool {
	_, ok := waiting[name]
	return ok
}

// containersWaiting reports whether the pod's sandbox is up with
// containers that have not started: its syncs try them again.
func (k *Kubelet) containersWaiting(pod *corev1.Pod) bool {
	pc, ok := k.podWorkers.containers.get(pod.UID)
	return ok && len(pc.waiting) > 0
}

// makeContainerMounts makes the container's subPath mounts, in the order
// of its volumeMounts, as makeMounts does before the container is
// created. A mount of a volume the simulated kubelet has no directory for
// (emptyDir, configMap, secret, ...: it sets up CSI volumes only) has its
// subPath checked but is not bind-mounted.
func (k *Kubelet) makeContainerMounts(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIP string) error {
	var env map[string]string
	for i, m := range c.VolumeMounts {
		subPath := m.SubPath
		if m.SubPathExpr != "" {
			if env == nil {
				var err error
				if env, err = k.containerEnv(ctx, pod, c, podIP); err != nil {
					return err
				}
			}
			var err error
			if subPath, err = expandSubPathExpr(m.SubPathExpr, env); err != nil {
				return err
			}
		}
		if subPath == "" {
			continue
		}
		if err := checkSubPath(subPath); err != nil {
			return err
		}
		vol, ok := k.volumeDir(pod, m.Name)
		if !ok {
			continue
		}
		if _, err := prepareSubPath(k.cfg.Dir, pod.UID, subPathMount{volumePath: vol.target, subPath: subPath,
			volume: vol.pvName, mount: m.Name, container: c.Name, index: i}); err != nil {
			return err
		}
	}
	return nil
}

// volumeDir is the pod's filesystem CSI volume of that name mounted for
// it, whose publish path (target) is the volume's directory on the node.
func (k *Kubelet) volumeDir(pod *corev1.Pod, name string) (mountedVolume, bool) {
	if k.cfg.SkipMountCheck {
		return mountedVolume{}, false // the driver mounts nothing: no directory to bind
	}
	for _, m := range k.actual.podVolumes(pod.UID) {
		if m.outerName() == name && !m.block {
			return m, true
		}
	}
	return mountedVolume{}, false
}

// workloadDir is where the built-in workload checks the pod volume
// outer (mounted as m): inside the subPath of the first container that
// mounts it, if it has one, as the container's process (csisim-workload on
// a real node) sees it; else the volume's own directory.
func workloadDir(kubeletDir string, pod *corev1.Pod, outer string, m mountedVolume) string {
	for _, c := range pod.Spec.Containers {
		for i, vm := range c.VolumeMounts {
			if vm.Name != outer {
				continue
			}
			if vm.SubPath == "" && vm.SubPathExpr == "" {
				return m.target
			}
			return SubPathTarget(kubeletDir, pod.UID, m.pvName, c.Name, i)
		}
	}
	return m.target
}

// containerEvents posts what the kubelet posts when it starts a
// container: the image is there (a simulated node has every image, so
// nothing is pulled, whatever the pull policy), then the container
// created and started — or, when its config could not be made, Failed
// (events.FailedToCreateContainer) with the reason.
func (k *Kubelet) containerEvents(pod *corev1.Pod, t containerStart) {
	ref := containerRef(pod, t.field, t.c.Name)
	k.events.Eventf(ref, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine and can be accessed by the pod", t.c.Image)
	if t.failed != "" {
		k.events.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", t.failed)
		return
	}
	k.events.Event(ref, corev1.EventTypeNormal, "Created", "Container created")
	k.events.Event(ref, corev1.EventTypeNormal, "Started", "Container started")
}
