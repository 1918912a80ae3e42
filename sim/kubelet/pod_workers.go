package kubelet

// The pod workers: one sync per pod key, which starts a pod, keeps a
// running one's volumes up, and ends a deleted one — models kubernetes
// pkg/kubelet/pod_workers.go (the pod's sync, terminating and terminated
// phases) and the kubelet's SyncPod, SyncTerminatingPod and
// SyncTerminatedPod (pkg/kubelet/kubelet.go). What the workers keep of
// pods — which UID a name had, which pods are due their periodic sync,
// whose containers were told to stop, the attempts of pods waiting for
// their volumes (sync_pending_pod.go) — is theirs, not the volume
// manager's.
//
// A deleted pod here has its containers stopped, its volumes torn down
// (unpublished, then the unused ones unstaged) and only then goes from the
// API. v1.37 posts a deleted pod's terminal status first, whatever its
// volumes do, and removes it once its volumes are unpublished from it
// (podVolumesExist), not when they are unstaged: a change local to
// syncTerminatingPod and tearDown.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// podWorkers is what the pod workers keep of the node's pods. Lives in the
// kubelet process.
type podWorkers struct {
	mu sync.Mutex
	// uids: namespace/name → the UID of the pod the kubelet knows by that
	// name, to tear down a pod that vanished or was replaced.
	uids map[string]types.UID
	// syncDue: pods (namespace/name) whose periodic sync is due.
	syncDue map[string]bool
	// killed: pods whose containers were told to stop.
	killed map[types.UID]bool
	// attempts: the pod worker's attempts for pods waiting for their
	// volumes (sync_pending_pod.go).
	attempts perPod[*podSync]
}

// reset forgets every pod, as a new kubelet process starts.
func (w *podWorkers) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uids = map[string]types.UID{}
	w.syncDue = map[string]bool{}
	w.killed = map[types.UID]bool{}
	w.attempts.reset()
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

// forget drops the pod once it is torn down; key "" for a pod known by no
// name (an orphan a restart found).
func (w *podWorkers) forget(uid types.UID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.killed, uid)
	if key != "" && w.uids[key] == uid {
		delete(w.uids, key)
	}
}

// markSyncDue says the pod's periodic sync is due.
func (w *podWorkers) markSyncDue(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncDue[key] = true
}

// takeSyncDue reports whether the pod's periodic sync is due, and clears it.
func (w *podWorkers) takeSyncDue(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	due := w.syncDue[key]
	delete(w.syncDue, key)
	return due
}

// markKilled records that the pod's containers were told to stop; it
// reports whether they had been already.
func (w *podWorkers) markKilled(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	done := w.killed[uid]
	w.killed[uid] = true
	return done
}

// syncPod is the pod worker's sync of one pod key (or the orphans' clean-up
// of a restarted kubelet, reconstruct.go).
func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	if key == orphansKey {
		return k.cleanUpOrphans(ctx)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Force-deleted, or gone while we were not looking: clean up.
		uid, known := k.podWorkers.uidOf(key)
		k.podWorkers.takeSyncDue(key)
		if known {
			return k.tearDown(ctx, uid, key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if old, ok := k.podWorkers.uidOf(key); ok && old != pod.UID {
		// A new pod under the name of one not torn down yet.
		if err := k.tearDown(ctx, old, key); err != nil {
			return err
		}
	}
	k.podWorkers.track(key, pod.UID)
	resync := k.podWorkers.takeSyncDue(key)
	uncertain := k.actual.hasUncertain(pod.UID)
	if pod.DeletionTimestamp != nil {
		return k.syncTerminatingPod(ctx, pod, key)
	}
	return k.syncLivePod(ctx, pod, resync, uncertain)
}

// syncLivePod starts a pending pod once its volumes are set up; for a
// running one, it sets up again what a restarted kubelet found on disk
// (uncertain) and, on its periodic sync (resync), publishes again the
// volumes of drivers that ask for it (requiresRepublish). Then the
// reconciler expands the mounted volumes that have grown (expand.go); a
// failure does not stop the pod.
func (k *Kubelet) syncLivePod(ctx context.Context, pod *corev1.Pod, resync, uncertain bool) error {
	switch pod.Status.Phase {
	case corev1.PodPending:
		// sync_pending_pod.go: status ContainerCreating, then the volumes.
		if err := k.syncPendingPod(ctx, pod); err != nil {
			return err
		}
		k.runWorkload(pod)
		k.containersStarted(pod)
		if err := k.reportRunning(ctx, pod); err != nil {
			return err
		}
	case corev1.PodRunning:
		var err error
		switch {
		case uncertain:
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
		return nil // a claim or volume gone meanwhile: nothing to expand
	}
	return k.expandInUse(ctx, pod, vols)
}

// syncTerminatingPod ends a deleted pod: its containers stop, its volumes
// are torn down, then it goes from the API.
func (k *Kubelet) syncTerminatingPod(ctx context.Context, pod *corev1.Pod, key string) error {
	k.stopContainersOnce(pod)
	if err := k.tearDown(ctx, pod.UID, key); err != nil {
		return err
	}
	// Containers are stopped and volumes cleaned up: the pod may go.
	zero := int64(0)
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s: %w", key, err)
	}
	return nil
}

// stopContainersOnce posts the Killing events of a running pod being
// deleted, once however often its teardown is retried.
func (k *Kubelet) stopContainersOnce(pod *corev1.Pod) {
	if pod.Status.Phase != corev1.PodRunning {
		return
	}
	if !k.podWorkers.markKilled(pod.UID) {
		k.containersStopping(pod)
	}
}

// tearDown is what is left of a terminated pod once its containers have
// stopped: the reconciler unpublishes its volumes, its directory and logs
// go, the populator and the pod workers forget it, and the volumes no
// other pod on the node uses are unstaged. volumesInUse drops them at the
// next node status sync; the attach/detach controller detaches only after
// that.
func (k *Kubelet) tearDown(ctx context.Context, uid types.UID, key string) error {
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
	k.removePod(uid)
	k.tokens.forgetPod(uid)
	k.podWorkers.forget(uid, key)
	return k.unmountDevices(ctx)
}

// forgetGonePods drops what the pod workers, the status manager and the
// network keep of pods no longer here or being deleted (a new pod under an
// old name has a UID of its own), and returns the node's pods.
func (k *Kubelet) forgetGonePods() []*corev1.Pod {
	pods, _ := k.pods.List(labels.Everything())
	live := map[types.UID]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live[p.UID] = true
		}
	}
	k.podWorkers.attempts.forget(live)
	k.statuses.forget(live)
	k.sandboxIPs.forget(live)
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
