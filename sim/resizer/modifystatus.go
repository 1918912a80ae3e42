package resizer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/volumeutil"
)

// callModify is ControllerModifyVolume of the PV's volume with the class's
// parameters, then, on success, the record of it on the PV and the claim.
// Its errors are the driver's (a gRPC status) or, before or after the
// call, the sidecar's own.
func (m *Modifier) callModify(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, vac *storagev1.VolumeAttributesClass) (*corev1.PersistentVolumeClaim, error) {
	src := pv.Spec.CSI
	if src == nil {
		return claim, fmt.Errorf("volume %v is not a CSI volumes, modify volume feature only supports CSI volumes", pv.Name)
	}
	if src.VolumeHandle == "" {
		return claim, errors.New("empty volume handle")
	}
	ref := src.ControllerExpandSecretRef
	if name, ns := pv.Annotations[volumeutil.AnnModifySecretName], pv.Annotations[volumeutil.AnnModifySecretNamespace]; name != "" && ns != "" {
		ref = &corev1.SecretReference{Name: name, Namespace: ns}
	}
	secrets, err := volumeutil.SecretData(ctx, m.client, ref)
	if err != nil {
		return claim, err
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, m.timeout)
	_, err = m.csi.ControllerModifyVolume(callCtx, &csi.ControllerModifyVolumeRequest{
		VolumeId: src.VolumeHandle, Secrets: secrets, MutableParameters: vac.Parameters})
	cancel()
	if err != nil {
		return claim, err
	}
	updated, err := m.markCompleted(ctx, claim, pv)
	if err != nil {
		return claim, fmt.Errorf("modify volume failed to mark pvc %s modify volume completed: %v ", claim.Name, err)
	}
	return updated, nil
}

// markStatus records the claim's modify status other than done: Pending
// (nothing else changes), or InProgress or Infeasible with the
// ModifyingVolume condition and, after an error, ModifyVolumeError with
// the driver's code and message (external-resizer
// pkg/modifycontroller/modify_status.go). Starting a modify (no error)
// sets its target, the class the claim asks for.
func (m *Modifier) markStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, s corev1.PersistentVolumeClaimModifyVolumeStatus, cause error) (*corev1.PersistentVolumeClaim, error) {
	next := claim.DeepCopy()
	if next.Status.ModifyVolumeStatus == nil {
		next.Status.ModifyVolumeStatus = &corev1.ModifyVolumeStatus{}
	}
	next.Status.ModifyVolumeStatus.Status = s
	if s != corev1.PersistentVolumeClaimModifyVolumePending {
		now := metav1.NewTime(m.clock.Now())
		modifying := corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimVolumeModifyingVolume,
			Status: corev1.ConditionTrue, LastProbeTime: now}
		target := next.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName
		var failed []corev1.PersistentVolumeClaimCondition
		switch {
		case cause == nil:
			target = attributesClass(claim)
			next.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName = target
			modifying.Message = fmt.Sprintf("Modifying volume to %q is in progress.", target)
		case finalError(cause):
			modifying.Message = fmt.Sprintf("Modifying volume to %q failed. Waiting for retry.", target)
		default:
			modifying.Message = fmt.Sprintf("Modifying volume to %q is still in progress.", target)
		}
		if cause != nil {
			st, _ := status.FromError(cause)
			failed = append(failed, corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimVolumeModifyVolumeError,
				Status: corev1.ConditionTrue, Reason: st.Code().String(), Message: st.Message(), LastProbeTime: now})
		}
		next.Status.Conditions = mergeModifyConditions(next.Status.Conditions, append([]corev1.PersistentVolumeClaimCondition{modifying}, failed...))
	}
	updated, err := m.patchClaim(ctx, claim, next, true)
	if err != nil {
		return claim, fmt.Errorf("mark PVC %q as modify volume failed, errored with: %v", claim.Name, err)
	}
	return updated, nil
}

// markCompleted records a done modify: the PV names the class first, then
// the claim's current class is its target, its modify status and modify
// conditions are gone.
func (m *Modifier) markCompleted(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	done := claim.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName
	next := claim.DeepCopy()
	next.Status.ModifyVolumeStatus = nil
	next.Status.CurrentVolumeAttributesClassName = &done
	next.Status.Conditions = slices.DeleteFunc(next.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimVolumeModifyVolumeError || c.Type == corev1.PersistentVolumeClaimVolumeModifyingVolume
	})
	nextPV := pv.DeepCopy()
	nextPV.Spec.VolumeAttributesClassName = &done
	if _, err := patchVolume(ctx, m.client, pv, nextPV); err != nil {
		return claim, fmt.Errorf("update pv.Spec.VolumeAttributesClassName for PVC %q failed, errored with: %v", claim.Name, err)
	}
	updated, err := m.patchClaim(ctx, claim, next, false)
	if err != nil {
		return claim, fmt.Errorf("mark PVC %q as ModifyVolumeCompleted failed, errored with: %v", claim.Name, err)
	}
	return updated, nil
}

// markRolledBack takes the ModifyingVolume condition away.
func (m *Modifier) markRolledBack(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	next := claim.DeepCopy()
	next.Status.Conditions = slices.DeleteFunc(next.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimVolumeModifyingVolume
	})
	if _, err := m.patchClaim(ctx, claim, next, false); err != nil {
		return fmt.Errorf("mark PVC %q as rolled back failed: %v", claim.Name, err)
	}
	return nil
}

// mergeModifyConditions puts each new condition in the place of the old one
// of its type, or at the end, and keeps the others; a condition's
// lastTransitionTime moves only when its status or reason changes
// (external-resizer pkg/util/util.go MergePVCConditions).
func mergeModifyConditions(old, added []corev1.PersistentVolumeClaimCondition) []corev1.PersistentVolumeClaimCondition {
	pending := map[corev1.PersistentVolumeClaimConditionType]bool{}
	for _, c := range added {
		pending[c.Type] = true
	}
	out := []corev1.PersistentVolumeClaimCondition{}
	for _, o := range old {
		i := slices.IndexFunc(added, func(c corev1.PersistentVolumeClaimCondition) bool { return c.Type == o.Type })
		if i < 0 {
			out = append(out, o)
			continue
		}
		n := added[i]
		n.LastTransitionTime = o.LastTransitionTime
		if n.Reason != o.Reason || n.Status != o.Status {
			n.LastTransitionTime = n.LastProbeTime
		}
		out = append(out, n)
		delete(pending, o.Type)
	}
	for _, n := range added {
		if pending[n.Type] {
			n.LastTransitionTime = n.LastProbeTime
			out = append(out, n)
		}
	}
	return out
}

// patchClaim writes the difference between claim and next to the claim's
// status as the sidecar's util.PatchClaim does, with claim's
// resourceVersion if withVersion. Unlike the resize controller, the
// modify controller does not write the answer into its cache.
func (m *Modifier) patchClaim(ctx context.Context, claim, next *corev1.PersistentVolumeClaim, withVersion bool) (*corev1.PersistentVolumeClaim, error) {
	return patchClaimStatus(ctx, m.client, claim, next, withVersion)
}
