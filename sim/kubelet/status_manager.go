package kubelet

// The status manager: it posts the status generated for a pod
// (status_generate.go) when it differs from what it last posted — models
// kubernetes pkg/kubelet/status/status_manager.go, with the patch of
// pkg/util/pod/pod.go PatchPodStatus.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// statusManager is the status manager's cache of what it posted, per pod.
// Lives in the kubelet process.
type statusManager struct {
	mu      sync.Mutex
	written map[types.UID]corev1.PodStatus
}

// cached is the status last posted for the pod.
func (m *statusManager) cached(uid types.UID) (corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.written[uid]
	return s, ok
}

// posted records the status just posted for the pod.
func (m *statusManager) posted(uid types.UID, status corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil {
		m.written = map[types.UID]corev1.PodStatus{}
	}
	m.written[uid] = status
}

// forget drops what is kept of pods not in live; a new pod under an old
// name has a UID of its own.
func (m *statusManager) forget(live map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.written {
		if !live[uid] {
			delete(m.written, uid)
		}
	}
}

// reset empties the cache: a new kubelet process has posted nothing.
func (m *statusManager) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written = nil
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
	k.podWorkers.endAttempts(pod.UID)
	return nil
}

// postPodStatus generates the pod's status (sb nil: no sandbox yet) and,
// if it differs from what the status manager last posted, patches it onto
// the pod as the status manager does (kubernetes pkg/util/pod/pod.go
// PatchPodStatus): a strategic merge patch of the status subresource from
// the pod's status as the API server has it, with the pod's UID as a
// precondition.
func (k *Kubelet) postPodStatus(ctx context.Context, pod *corev1.Pod, sb *sandbox) error {
	cached, isCached := k.statuses.cached(pod.UID)
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
	k.statuses.posted(pod.UID, status)
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
