package kubelet

// The status manager: it posts the status generated for a pod
// (status_generate.go) when it differs from what it last posted — models
// kubernetes pkg/kubelet/status/status_manager.go, with the patch of
// pkg/util/pod/pod.go PatchPodStatus.

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// reportStarted posts the pod's status once its sandbox has an address
// and its containers have started (Running) or some could not (Pending);
// its pod worker no longer waits for its volumes.
func (k *Kubelet) reportStarted(ctx context.Context, pod *corev1.Pod, sb *sandbox) error {
	if err := k.postPodStatus(ctx, pod, sb); err != nil {
		return fmt.Errorf("reporting pod %s/%s started: %w", pod.Namespace, pod.Name, err)
	}
	k.podWorkers.attempts.delete(pod.UID)
	return nil
}

// postPodStatus generates the pod's status (sb nil: no sandbox yet) and
// posts it.
func (k *Kubelet) postPodStatus(ctx context.Context, pod *corev1.Pod, sb *sandbox) error {
	return k.postStatus(ctx, pod, func(old corev1.PodStatus) corev1.PodStatus { return k.generatePodStatus(pod, old, sb) })
}

// postStatus generates the pod's status from the one the status manager
// last posted (else the pod's) and, if it differs from it, patches it onto
// the pod as the status manager does (kubernetes pkg/util/pod/pod.go
// PatchPodStatus): a strategic merge patch of the status subresource from
// the pod's status as the API server has it, with the pod's UID as a
// precondition.
func (k *Kubelet) postStatus(ctx context.Context, pod *corev1.Pod, generate func(old corev1.PodStatus) corev1.PodStatus) error {
	cached, isCached := k.statuses.get(pod.UID)
	old := pod.Status
	if isCached {
		old = cached
	}
	status := generate(old)
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
	k.statuses.set(pod.UID, status)
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

// deleteFinishedPod is the status manager's last write for a pod whose
// termination is finished (canBeDeleted: being deleted, its phase terminal,
// SyncTerminatedPod done): it deletes the pod with grace period 0 and its
// UID as a precondition, so that a new pod under the name is left alone.
func (k *Kubelet) deleteFinishedPod(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
