package pvcontroller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/csisim/csisim/sim/volumeutil"
)

// syncClaimProtection is the pvc-protection controller's sync: a claim
// being deleted loses its finalizer once no pod needs it; any other keeps
// the finalizer and, when Bound, its Unused condition up to date. It runs
// on claim and pod events, apart from the binder, as the real controllers
// do.
func (c *Controller) syncClaimProtection(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp != nil {
		return c.releaseClaimProtection(ctx, claim)
	}
	if claim, err = c.addClaimProtection(ctx, claim); err != nil {
		return fmt.Errorf("protecting claim %s: %w", key, err)
	}
	return c.syncUnusedCondition(ctx, claim)
}

// syncVolumeProtection is the pv-protection controller's sync.
func (c *Controller) syncVolumeProtection(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return c.releaseVolumeProtection(ctx, pv)
	}
	if _, err := c.addVolumeProtection(ctx, pv); err != nil {
		return fmt.Errorf("protecting volume %s: %w", name, err)
	}
	return nil
}

// releaseClaimProtection removes kubernetes.io/pvc-protection from a
// deleted claim once no scheduled pod holds it. A pod that was never
// scheduled does not hold the claim: the kubelet will not start a pod whose
// claim is being deleted. A pod that has ended (Succeeded, Failed) still
// does, until its object is gone: its kubelet may not have unmounted the
// volume yet, and releasing the claim then lets the volume be deleted
// under a mount (found with csisim diff against v1.37.2; the real
// controller's podUsesPVC does not look at the phase).
func (c *Controller) releaseClaimProtection(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if !slices.Contains(claim.Finalizers, volumeutil.PVCProtectionFinalizer) {
		return nil
	}
	pods, err := c.claimPods(claim)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" && holdsClaim(pod, claim) {
			return nil // in use; the pod's deletion enqueues the claim again
		}
	}
	cl := claim.DeepCopy()
	cl.Finalizers = slices.DeleteFunc(cl.Finalizers, func(f string) bool { return f == volumeutil.PVCProtectionFinalizer })
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// holdsClaim: the pod keeps a deleted claim from going. A
// persistentVolumeClaim volume holds it as long as the pod exists; a
// generic ephemeral volume's claim, owned by the pod, is let go once the
// pod is shut down, so that a pod finalizer waiting for the claim and the
// claim waiting for the pod cannot hold each other forever.
func holdsClaim(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			if v.PersistentVolumeClaim.ClaimName == claim.Name {
				return true
			}
		case v.Ephemeral != nil:
			if name, _ := volumeutil.ClaimName(pod, v); name == claim.Name && !shutDown(pod) && ephemeral.VolumeIsForPod(pod, claim) == nil {
				return true
			}
		}
	}
	return false
}

// shutDown: the kubelet is done with the pod (deleted with grace period 0)
// or it was force-deleted.
func shutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// releaseVolumeProtection removes kubernetes.io/pv-protection from a
// deleted volume that is no longer Bound.
func (c *Controller) releaseVolumeProtection(ctx context.Context, pv *corev1.PersistentVolume) error {
	if !slices.Contains(pv.Finalizers, volumeutil.PVProtectionFinalizer) || pv.Status.Phase == corev1.VolumeBound {
		return nil
	}
	v := pv.DeepCopy()
	v.Finalizers = slices.DeleteFunc(v.Finalizers, func(f string) bool { return f == volumeutil.PVProtectionFinalizer })
	_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// The claim condition a v1.37 control plane keeps (PersistentVolumeClaim
// UnusedSinceTime, beta): whether a pod uses the claim, with the words the
// PVC protection controller writes (pkg/controller/volume/pvcprotection,
// KEP-5541; the same a real v1.37.2 kube-controller-manager writes under
// csisim diff).
const (
	conditionUnused       corev1.PersistentVolumeClaimConditionType = "Unused"
	reasonPodUsingPVC     string                                    = "PodUsingPVC"
	reasonNoPodsUsingPVC  string                                    = "NoPodsUsingPVC"
	messagePodUsingPVC    string                                    = "A pod is currently referencing this PVC"
	messageNoPodsUsingPVC string                                    = "No pods are currently referencing this PVC"
)

// syncUnusedCondition sets a Bound claim's Unused condition from the pods
// that may still run and use it, scheduled or not. Claims that are not
// Bound (or are being deleted) are left alone, as in v1.37.
func (c *Controller) syncUnusedCondition(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Status.Phase != corev1.ClaimBound || claim.DeletionTimestamp != nil {
		return nil
	}
	used, err := c.usedByPod(claim)
	if err != nil {
		return err
	}
	want := corev1.PersistentVolumeClaimCondition{Type: conditionUnused, Status: corev1.ConditionTrue, Reason: reasonNoPodsUsingPVC, Message: messageNoPodsUsingPVC}
	if used {
		want.Status, want.Reason, want.Message = corev1.ConditionFalse, reasonPodUsingPVC, messagePodUsingPVC
	}
	for _, have := range claim.Status.Conditions {
		if have.Type == conditionUnused && have.Status == want.Status && have.Reason == want.Reason {
			return nil
		}
	}
	cl := claim.DeepCopy()
	want.LastTransitionTime = metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	cl.Status.Conditions = slices.DeleteFunc(cl.Status.Conditions, func(x corev1.PersistentVolumeClaimCondition) bool {
		return x.Type == conditionUnused
	})
	cl.Status.Conditions = append(cl.Status.Conditions, want)
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer claim comes back through the queue
	}
	return err
}

// usedByPod: a pod that has not finished names the claim.
func (c *Controller) usedByPod(claim *corev1.PersistentVolumeClaim) (bool, error) {
	pods, err := c.claimPods(claim)
	if err != nil {
		return false, err
	}
	for _, pod := range pods {
		if !terminated(pod) && usesClaim(pod, claim) {
			return true, nil
		}
	}
	return false, nil
}

// addClaimProtection puts kubernetes.io/pvc-protection back on a claim
// that lost it (admission adds it; someone may remove it by hand).
func (c *Controller) addClaimProtection(ctx context.Context, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	if slices.Contains(claim.Finalizers, volumeutil.PVCProtectionFinalizer) {
		return claim, nil
	}
	cl := claim.DeepCopy()
	cl.Finalizers = append(cl.Finalizers, volumeutil.PVCProtectionFinalizer)
	return c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
}

// addVolumeProtection puts kubernetes.io/pv-protection back on a volume
// that lost it.
func (c *Controller) addVolumeProtection(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	if slices.Contains(pv.Finalizers, volumeutil.PVProtectionFinalizer) {
		return pv, nil
	}
	v := pv.DeepCopy()
	v.Finalizers = append(v.Finalizers, volumeutil.PVProtectionFinalizer)
	return c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
}
