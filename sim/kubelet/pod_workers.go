package kubelet

// The pod workers: one sync per pod key, which starts a pod, keeps a
// running one's volumes up, and ends a deleted one — models kubernetes
// pkg/kubelet/pod_workers.go (the pod's sync, terminating, terminated and
// finished states) and the kubelet's SyncPod, SyncTerminatingPod and
// SyncTerminatedPod (pkg/kubelet/kubelet.go). What the workers keep of
// pods — which UID a name had, which pods are due a sync that republishes,
// how far a deleted pod's termination has come, the attempts of pods
// waiting for their volumes (sync_pending_pod.go) — is theirs, not the
// volume manager's.
//
// A deleted pod goes through the real pod worker's states, each a sync of
// its key of its own, so that what else is ready in between (the
// scheduler, the claim's protection controller, another pod's kubelet
// sync) may come first, as on a real node:
//   - terminating (SyncTerminatingPod): its containers are told to stop
//     (Killing), its status is posted for the deletion's generation, and,
//     once they have stopped, its terminal status (status_terminal.go):
//     Succeeded, each container terminated (Completed), the sandbox not
//     ready — before its volumes are touched, and whatever they do
//     afterwards. Then the populator no longer wants its volumes
//     (removePod);
//   - terminated (SyncTerminatedPod): the reconciler unpublishes its
//     volumes; once none is mounted for it (podVolumesExist), the status
//     manager posts its final status and deletes it from the API
//     (status_manager.go). Its devices, staged for the node, are the
//     reconciler's to unstage, each in a sync of its own (reconciler.go):
//     the pod is gone while NodeUnstageVolume may still run, and a new pod
//     may come for the same volume meanwhile;
//   - finished: nothing more to do but forget it when it leaves the
//     informer.

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/controller"
)

// plegRelistPeriod is how often the pod lifecycle event generator lists
// the containers (genericPlegRelistPeriod, kubernetes
// pkg/kubelet/kubelet.go): the containers a pod's sync started are seen at
// the next relist, whose events sync the pod again.
const plegRelistPeriod = time.Second

// terminationState is how far the pod worker has come with a deleted pod.
type terminationState int

const (
	// terminated: its containers have stopped and its terminal status is
	// posted (SyncTerminatingPod done).
	terminated terminationState = iota + 1
	// finished: its volumes are torn down from it and the status manager
	// has deleted it from the API (SyncTerminatedPod done).
	finished
	// rejected: a pod the kubelet rejected (attach_limit.go), Failed but
	// not deleted, whose volumes are still to be torn down.
	rejected
	// rejectedTornDown: a rejected pod whose volumes are torn down; it
	// stays in the API until it is deleted.
	rejectedTornDown
)

// podWorkers is what the pod workers keep of the node's pods. Lives in the
// kubelet process.
type podWorkers struct {
	mu sync.Mutex
	// uids: namespace/name → the UID of the pod the kubelet knows by that
	// name, to tear down a pod that vanished or was replaced.
	uids map[string]types.UID
	// syncDue: pods (namespace/name) due a sync that publishes again the
	// volumes of drivers that require it, and from when.
	syncDue map[string]time.Time
	// termination: how far each deleted pod's termination has come.
	termination map[types.UID]terminationState
	// attempts: the pod worker's attempts for pods waiting for their
	// volumes (sync_pending_pod.go).
	attempts perPod[*podSync]
	// containers: the pods whose sandbox is up, with their containers
	// that could not start (containers.go).
	containers perPod[*podContainers]
}

// reset forgets every pod, as a new kubelet process starts.
func (w *podWorkers) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uids = map[string]types.UID{}
	w.syncDue = map[string]time.Time{}
	w.termination = map[types.UID]terminationState{}
	w.attempts.reset()
	w.containers.reset()
}

// uidOf is the UID of the pod the kubelet knows by key.
func (w *podWorkers) uidOf(key string) (types.UID, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	uid, ok := w.uids[key]
	return uid, ok
}

// track records that key names the pod uid.
func (w *podWorkers) track(key string, uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uids[key] = uid
}

// knownUIDs are the UIDs of the pods the kubelet knows by name.
func (w *podWorkers) knownUIDs() []types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.UID, 0, len(w.uids))
	for _, uid := range w.uids {
		out = append(out, uid)
	}
	return out
}

// forget drops the pod once it is gone; key "" for a pod known by no name
// (an orphan a restart found).
func (w *podWorkers) forget(uid types.UID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.termination, uid)
	if key != "" && w.uids[key] == uid {
		delete(w.uids, key)
		delete(w.syncDue, key)
	}
}

// markSyncDue says the pod is due a sync that republishes from at on.
func (w *podWorkers) markSyncDue(key string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if due, ok := w.syncDue[key]; !ok || at.Before(due) {
		w.syncDue[key] = at
	}
}

// takeSyncDue reports whether the pod's sync that republishes is due at
// now, and clears it if it is.
func (w *podWorkers) takeSyncDue(key string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	due, ok := w.syncDue[key]
	if !ok || now.Before(due) {
		return false
	}
	delete(w.syncDue, key)
	return true
}

// untilSyncDue is how long until the pod's sync that republishes is due;
// false if none is to come.
func (w *podWorkers) untilSyncDue(key string, now time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	due, ok := w.syncDue[key]
	return due.Sub(now), ok
}

// terminationOf is how far the pod's termination has come (0: not begun).
func (w *podWorkers) terminationOf(uid types.UID) terminationState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.termination[uid]
}

// setTermination records how far the pod's termination has come.
func (w *podWorkers) setTermination(uid types.UID, st terminationState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.termination[uid] = st
}

// syncPod is the pod worker's sync of one pod key, or one of the node's
// other keys: the orphans' clean-up of a restarted kubelet
// (reconstruct.go) and the reconciler's unstaging of a device
// (reconciler.go).
func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	switch {
	case key == orphansKey:
		return k.cleanUpOrphans(ctx)
	case key == csiNodeUpdaterKey:
		return k.tickCSINodeUpdater(ctx)
	case strings.HasPrefix(key, deviceKeyPrefix):
		return k.syncDevice(ctx, corev1.UniqueVolumeName(strings.TrimPrefix(key, deviceKeyPrefix)))
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Deleted by the status manager, force-deleted, or gone while we
		// were not looking.
		if uid, known := k.podWorkers.uidOf(key); known {
			return k.forgetPod(ctx, uid, key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if old, ok := k.podWorkers.uidOf(key); ok && old != pod.UID {
		// A new pod under the name of one not forgotten yet.
		if err := k.forgetPod(ctx, old, key); err != nil {
			return err
		}
	}
	k.podWorkers.track(key, pod.UID)
	if pod.DeletionTimestamp != nil {
		return k.syncTerminatingPod(ctx, pod, key)
	}
	switch k.podWorkers.terminationOf(pod.UID) {
	case rejected:
		return k.syncRejectedPod(ctx, pod, key)
	case rejectedTornDown:
		return nil
	}
	return k.syncLivePod(ctx, pod, key)
}

// forgetPod drops a pod gone from the API: what is left of it on the node
// (all of it, for a pod force-deleted before its termination finished) is
// torn down first.
func (k *Kubelet) forgetPod(ctx context.Context, uid types.UID, key string) error {
	if st := k.podWorkers.terminationOf(uid); st != finished && st != rejectedTornDown {
		if err := k.tearDown(ctx, uid, key); err != nil {
			return err
		}
	}
	k.podWorkers.forget(uid, key)
	return nil
}

// syncLivePod starts a pending pod once its volumes are set up; for a
// running one, it sets up again what a restarted kubelet found on disk
// (uncertain) and, at a sync due to republish (the one its containers'
// start causes, the periodic ones), publishes again the volumes of drivers
// that ask for it (requiresRepublish). Then the reconciler expands the
// mounted volumes that have grown (expand.go); a failure does not stop the
// pod.
func (k *Kubelet) syncLivePod(ctx context.Context, pod *corev1.Pod, key string) error {
	if err := k.stepCrashLoops(ctx, pod); err != nil {
		return err
	}
	return k.withCrashLoops(pod, k.syncLivePodVolumes(ctx, pod, key))
}

// syncLivePodVolumes is syncLivePod's work on the pod's containers'
// start and its volumes.
func (k *Kubelet) syncLivePodVolumes(ctx context.Context, pod *corev1.Pod, key string) error {
	now := k.clock.Now()
	resync := k.podWorkers.takeSyncDue(key, now)
	switch pod.Status.Phase {
	case corev1.PodPending:
		if k.containersWaiting(pod) {
			// Its sandbox is up: the containers that could not start
			// are tried again (containers.go).
			return k.startContainers(ctx, pod)
		}
		// sync_pending_pod.go: status ContainerCreating, then the volumes.
		if err := k.syncPendingPod(ctx, pod); errors.Is(err, errPodRejected) {
			return nil // queued again, for its volumes' tear-down
		} else if err != nil {
			return err
		}
		if err := k.startContainers(ctx, pod); err != nil {
			return err
		}
		// The real kubelet syncs the pod again when PLEG sees its
		// containers started; only a volume whose driver requires
		// republishing makes that sync show.
		if k.hasRepublishVolume(pod) {
			k.podWorkers.markSyncDue(key, now.Add(plegRelistPeriod))
		}
	case corev1.PodRunning:
		var err error
		switch {
		case k.actual.hasUncertain(pod.UID):
			err = k.setUp(ctx, pod, false)
		case resync:
			err = k.setUp(ctx, pod, true)
		}
		if err != nil {
			return err
		}
	default:
		return nil
	}
	vols, err := k.resolveVolumes(pod)
	if err != nil {
		return k.untilDue(key, now, nil) // a claim or volume gone meanwhile: nothing to expand
	}
	return k.untilDue(key, now, k.expandInUse(ctx, pod, vols))
}

// untilDue has the pod synced again when a sync that republishes is due,
// unless err asks for an earlier one or is a failure (whose backoff
// decides).
func (k *Kubelet) untilDue(key string, now time.Time, err error) error {
	wait, due := k.podWorkers.untilSyncDue(key, now)
	if !due {
		return err
	}
	var again controller.RequeueAfter
	switch {
	case err == nil:
		return controller.RequeueAfter(wait)
	case errors.As(err, &again) && wait < time.Duration(again):
		return controller.RequeueAfter(wait)
	}
	return err
}

// syncTerminatingPod ends a deleted pod, one state a sync: its containers
// stop and its terminal status is posted (terminating); its volumes are
// torn down from it and it goes from the API (terminated).
func (k *Kubelet) syncTerminatingPod(ctx context.Context, pod *corev1.Pod, key string) error {
	switch k.podWorkers.terminationOf(pod.UID) {
	case 0:
		if err := k.stopContainers(ctx, pod); err != nil {
			return err
		}
		k.podWorkers.setTermination(pod.UID, terminated)
		// The populator sees the pod's containers stopped: its volumes
		// are no longer wanted, and the reconciler unmounts them.
		k.removePod(pod.UID)
		// SyncTerminatedPod is the pod worker's next sync of the pod.
		k.queue.Add(key)
		return nil
	case terminated, rejected:
		return k.syncTerminatedPod(ctx, pod, key)
	case rejectedTornDown:
		// A rejected pod, torn down already: the status manager deletes it.
		if err := k.deleteFinishedPod(ctx, pod); err != nil {
			return err
		}
		k.podWorkers.setTermination(pod.UID, finished)
	}
	return nil // finished: its informer will say it is gone
}

// stopContainers is SyncTerminatingPod: the status generated for the pod
// is posted (for the generation its deletion made), its running containers
// are told to stop (Killing), and once they have stopped — at once, here:
// the workload exits when told — its terminal status is posted. A pod
// that never ran has nothing to stop; its final status waits for
// TerminatePod (syncTerminatedPod).
func (k *Kubelet) stopContainers(ctx context.Context, pod *corev1.Pod) error {
	sb := k.runningSandbox(pod)
	if sb != nil {
		k.containersStopping(pod, sb)
	}
	if err := k.postPodStatus(ctx, pod, sb); err != nil {
		return err
	}
	if sb == nil || sb.noneRunning(pod) {
		// Nothing ran: its final status is TerminatePod's.
		return nil
	}
	return k.postStatus(ctx, pod, func(old corev1.PodStatus) corev1.PodStatus { return k.stoppedStatus(pod, old) })
}

// syncTerminatedPod is SyncTerminatedPod: the pod's volumes are torn down
// from it, then the status manager posts its final status (TerminatePod)
// and, the pod's termination being finished, deletes it from the API.
func (k *Kubelet) syncTerminatedPod(ctx context.Context, pod *corev1.Pod, key string) error {
	if err := k.tearDown(ctx, pod.UID, key); err != nil {
		return err
	}
	if err := k.postStatus(ctx, pod, func(old corev1.PodStatus) corev1.PodStatus { return finalStatus(old, len(pod.Spec.InitContainers) > 0) }); err != nil {
		return err
	}
	if err := k.deleteFinishedPod(ctx, pod); err != nil {
		return err
	}
	k.podWorkers.setTermination(pod.UID, finished)
	return nil
}

// tearDown is what is left of a pod once its containers have stopped: the
// populator no longer wants its volumes, the reconciler unpublishes them
// (a failure is retried with the operation's backoff), its directory and
// logs go once nothing is mounted there (podVolumesExist), the actual
// state and the token manager forget it, and the devices no other pod
// uses are queued for unstaging (reconciler.go). volumesInUse drops them
// at the next node status sync after they are unstaged; the attach/detach
// controller detaches only after that.
func (k *Kubelet) tearDown(ctx context.Context, uid types.UID, key string) error {
	k.removePod(uid)
	if err := k.unmountPodVolumes(ctx, uid); err != nil {
		return err
	}
	if err := removeUnmountedDir(filepath.Join(k.cfg.Dir, "pods", string(uid))); err != nil {
		return err
	}
	if ns, name, ok := strings.Cut(key, "/"); ok {
		if err := k.removePodLogs(ns, name, uid); err != nil {
			return err
		}
	}
	k.actual.deletePod(uid)
	k.tokens.forgetPod(uid)
	k.queueUnusedDevices()
	return nil
}

// forgetGonePods drops what the pod workers and the network keep of pods
// no longer here or being deleted, and what the status manager keeps of
// pods no longer here (a new pod under an old name has a UID of its own),
// and returns the node's pods.
//
// It runs on every pending pod's sync, so it reads the node's pods in the
// cache's own order: what it keeps and drops, and what its callers do with
// the pods (sets of UIDs, the addresses taken), do not depend on the
// order, and sorting the node's pods on every sync made it cost as the
// square of the pods per node (5.7% of a run of 3,000 lifecycles on 100
// nodes).
func (k *Kubelet) forgetGonePods() []*corev1.Pod {
	pods := k.nodePodsAnyOrder()
	here, live := make(map[types.UID]bool, len(pods)), make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		here[p.UID] = true
		if p.DeletionTimestamp == nil {
			live[p.UID] = true
		}
	}
	k.podWorkers.attempts.forget(live)
	k.podWorkers.containers.forget(here)
	k.statuses.forget(here)
	k.sandboxIPs.forget(live)
	return pods
}

// nodePodsAnyOrder is the node's pods from the kubelet's cache, in no
// particular order: the simulator's caches sort every list, which callers
// that want only the set need not pay for.
func (k *Kubelet) nodePodsAnyOrder() []*corev1.Pod {
	var objs []any
	if u, ok := k.podIndex.(interface{ ListAnyOrder() []any }); ok {
		objs = u.ListAnyOrder()
	} else {
		objs = k.podIndex.List()
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// perPod is what a kubelet process keeps for each pod it has: dropped when
// the pod goes (forget) and with the process (reset).
type perPod[V any] struct {
	mu sync.Mutex
	m  map[types.UID]V
}

// do runs f with the map, locked.
func (p *perPod[V]) do(f func(map[types.UID]V)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.UID]V{}
	}
	f(p.m)
}

// get is what is kept for the pod.
func (p *perPod[V]) get(uid types.UID) (V, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[uid]
	return v, ok
}

// set keeps v for the pod.
func (p *perPod[V]) set(uid types.UID, v V) {
	p.do(func(m map[types.UID]V) { m[uid] = v })
}

// delete drops what is kept for the pod.
func (p *perPod[V]) delete(uid types.UID) {
	p.do(func(m map[types.UID]V) { delete(m, uid) })
}

// forget drops what is kept for pods not in live.
func (p *perPod[V]) forget(live map[types.UID]bool) {
	p.do(func(m map[types.UID]V) { maps.DeleteFunc(m, func(uid types.UID, _ V) bool { return !live[uid] }) })
}

// reset drops everything, as a new kubelet process starts.
func (p *perPod[V]) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m = nil
}
