package resizer

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/sim/volumeutil"
)

// resizeConditions are the claim conditions the resizer owns (external-
// resizer pkg/util/util.go knownResizeConditions).
var resizeConditions = map[corev1.PersistentVolumeClaimConditionType]bool{
	corev1.PersistentVolumeClaimResizing:                true,
	corev1.PersistentVolumeClaimFileSystemResizePending: true,
	corev1.PersistentVolumeClaimControllerResizeError:   true,
	corev1.PersistentVolumeClaimNodeResizeError:         true,
}

// mergeConditions keeps the conditions that are not about resizing, puts
// each new condition in the place of the old one of its type (or at the
// end), and keeps the other resize conditions only if keepOld.
func mergeConditions(old []corev1.PersistentVolumeClaimCondition, added []corev1.PersistentVolumeClaimCondition, keepOld bool) []corev1.PersistentVolumeClaimCondition {
	pending := map[corev1.PersistentVolumeClaimConditionType]corev1.PersistentVolumeClaimCondition{}
	for _, c := range added {
		pending[c.Type] = c
	}
	var out []corev1.PersistentVolumeClaimCondition
	for _, c := range old {
		switch n, ok := pending[c.Type]; {
		case !resizeConditions[c.Type]:
			out = append(out, c)
		case ok:
			out = append(out, n)
			delete(pending, c.Type)
		case keepOld:
			out = append(out, c)
		}
	}
	for _, c := range added {
		if _, ok := pending[c.Type]; ok {
			out = append(out, c)
		}
	}
	return out
}

func (r *Resizer) condition(t corev1.PersistentVolumeClaimConditionType, message string) corev1.PersistentVolumeClaimCondition {
	return corev1.PersistentVolumeClaimCondition{Type: t, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(r.clock.Now()), Message: message}
}

func setResizeStatus(claim *corev1.PersistentVolumeClaim, s corev1.ClaimResourceStatus) {
	if claim.Status.AllocatedResourceStatuses == nil {
		claim.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = s
}

// markControllerResizeInProgress records that the controller expands to
// size: the Resizing condition, allocatedResources, and (updateStatus)
// ControllerResizeInProgress.
func (r *Resizer) markControllerResizeInProgress(ctx context.Context, claim *corev1.PersistentVolumeClaim, size resource.Quantity, updateStatus bool) (*corev1.PersistentVolumeClaim, error) {
	next := claim.DeepCopy()
	next.Status.Conditions = mergeConditions(next.Status.Conditions,
		[]corev1.PersistentVolumeClaimCondition{r.condition(corev1.PersistentVolumeClaimResizing, "")}, !updateStatus)
	delete(next.Annotations, volumeutil.AnnNodeExpansionNotRequired)
	if updateStatus {
		setResizeStatus(next, corev1.PersistentVolumeClaimControllerResizeInProgress)
	}
	if next.Status.AllocatedResources == nil {
		next.Status.AllocatedResources = corev1.ResourceList{}
	}
	next.Status.AllocatedResources[corev1.ResourceStorage] = size
	return r.patchClaim(ctx, claim, next, true)
}

// markNodeExpansionPending hands the expansion to the kubelet.
func (r *Resizer) markNodeExpansionPending(ctx context.Context, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	next := claim.DeepCopy()
	next.Status.Conditions = mergeConditions(next.Status.Conditions,
		[]corev1.PersistentVolumeClaimCondition{r.condition(corev1.PersistentVolumeClaimFileSystemResizePending, FileSystemResizePendingMessage)}, true)
	delete(next.Annotations, volumeutil.AnnNodeExpansionNotRequired)
	setResizeStatus(next, corev1.PersistentVolumeClaimNodeResizePending)
	updated, err := r.patchClaim(ctx, claim, next, true)
	if err != nil {
		return updated, fmt.Errorf("mark PVC %q as node expansion required failed: %v", claim.Namespace+"/"+claim.Name, err)
	}
	r.events.Event(claim, corev1.EventTypeNormal, EventFileSystemResizeRequired, "Require file system resize of volume on node")
	return updated, nil
}

// markControllerExpansionFailed records a final error: the
// ControllerResizeError condition and, for an infeasible size,
// ControllerResizeInfeasible. Written without a resourceVersion, so that
// it lands even from a slightly old copy.
func (r *Resizer) markControllerExpansionFailed(ctx context.Context, claim *corev1.PersistentVolumeClaim, cause error, infeasible bool) (*corev1.PersistentVolumeClaim, error) {
	next := claim.DeepCopy()
	if infeasible {
		setResizeStatus(next, corev1.PersistentVolumeClaimControllerResizeInfeasible)
	}
	next.Status.Conditions = mergeConditions(next.Status.Conditions, []corev1.PersistentVolumeClaimCondition{
		r.condition(corev1.PersistentVolumeClaimControllerResizeError, fmt.Sprintf("failed to expand pvc with %v", cause))}, true)
	updated, err := r.patchClaim(ctx, claim, next, false)
	if err != nil {
		return claim, fmt.Errorf("mark PVC %q as controller expansion failed, errored with: %v", claim.Namespace+"/"+claim.Name, err)
	}
	return updated, nil
}

// markExpansionFinished records a finished expansion: the new capacity,
// no resize conditions or status, and the annotation that tells the
// kubelet it has nothing to do.
func (r *Resizer) markExpansionFinished(ctx context.Context, claim *corev1.PersistentVolumeClaim, size resource.Quantity) (*corev1.PersistentVolumeClaim, error) {
	next := claim.DeepCopy()
	if next.Status.Capacity == nil {
		next.Status.Capacity = corev1.ResourceList{}
	}
	next.Status.Capacity[corev1.ResourceStorage] = size
	next.Status.Conditions = mergeConditions(claim.Status.Conditions, nil, false)
	delete(next.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(next.Status.AllocatedResourceStatuses) == 0 {
		next.Status.AllocatedResourceStatuses = nil
	}
	metav1.SetMetaDataAnnotation(&next.ObjectMeta, volumeutil.AnnNodeExpansionNotRequired, "true")
	updated, err := r.patchClaim(ctx, claim, next, true)
	if err != nil {
		return claim, fmt.Errorf("mark PVC %q as resize finished failed: %v", claim.Namespace+"/"+claim.Name, err)
	}
	r.events.Event(claim, corev1.EventTypeNormal, EventResizeSuccessful, "Resize volume succeeded")
	return updated, nil
}

// patchClaim writes the difference between claim and next to the claim's
// status subresource (patchClaimStatus) and keeps the answer in the cache.
func (r *Resizer) patchClaim(ctx context.Context, claim, next *corev1.PersistentVolumeClaim, withVersion bool) (*corev1.PersistentVolumeClaim, error) {
	updated, err := patchClaimStatus(ctx, r.client, claim, next, withVersion)
	if err != nil {
		return claim, err
	}
	if err := r.claims.Update(updated); err != nil {
		return updated, fmt.Errorf("error updating PVC %s in local cache: %v", claim.Namespace+"/"+claim.Name, err)
	}
	return updated, nil
}

// patchClaimStatus writes the difference between claim and next to the
// claim's status subresource as a strategic merge patch, with claim's
// resourceVersion if withVersion (external-resizer pkg/util/util.go
// PatchClaim).
func patchClaimStatus(ctx context.Context, client kubernetes.Interface, claim, next *corev1.PersistentVolumeClaim, withVersion bool) (*corev1.PersistentVolumeClaim, error) {
	patch, err := twoWayPatch(claim, next, corev1.PersistentVolumeClaim{})
	if err != nil {
		return claim, fmt.Errorf("can't patch status of PVC %s as generate path data failed: %v", claim.Namespace+"/"+claim.Name, err)
	}
	if withVersion {
		if patch, err = withResourceVersion(patch, claim.ResourceVersion); err != nil {
			return claim, err
		}
	}
	updated, err := client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name,
		types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return claim, fmt.Errorf("can't patch status of  PVC %s with %v", claim.Namespace+"/"+claim.Name, err)
	}
	return updated, nil
}

// updateVolumeCapacity grows the PV to size; when the node still has to
// expand, it notes the capacity before (volumeutil.AnnPreResizeCapacity),
// unless a note is there already.
func (r *Resizer) updateVolumeCapacity(ctx context.Context, pv *corev1.PersistentVolume, old, size resource.Quantity, nodeRequired bool) error {
	next := pv.DeepCopy()
	next.Spec.Capacity[corev1.ResourceStorage] = size
	if nodeRequired && !metav1.HasAnnotation(pv.ObjectMeta, volumeutil.AnnPreResizeCapacity) {
		metav1.SetMetaDataAnnotation(&next.ObjectMeta, volumeutil.AnnPreResizeCapacity, old.String())
	}
	if _, err := r.patchVolume(ctx, pv, next); err != nil {
		return fmt.Errorf("updating capacity of PV %q to %s failed: %v", pv.Name, size.String(), err)
	}
	return nil
}

// patchVolume patches the PV (patchVolume) and keeps the answer in the
// cache.
func (r *Resizer) patchVolume(ctx context.Context, pv, next *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	updated, err := patchVolume(ctx, r.client, pv, next)
	if err != nil {
		return nil, err
	}
	if err := r.volumes.Update(updated); err != nil {
		return nil, fmt.Errorf("error updating PV %s in local cache: %v", pv.Name, err)
	}
	return updated, nil
}

// patchVolume writes the difference between pv and next as a strategic
// merge patch (external-resizer pkg/util/util.go PatchPersistentVolume).
func patchVolume(ctx context.Context, client kubernetes.Interface, pv, next *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	patch, err := twoWayPatch(pv, next, corev1.PersistentVolume{})
	if err != nil {
		return nil, fmt.Errorf("can't update capacity of PV %s as generate path data failed: %v", pv.Name, err)
	}
	updated, err := client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("update capacity of PV %s failed: %v", pv.Name, err)
	}
	return updated, nil
}

func twoWayPatch(old, cur, schema any) ([]byte, error) {
	a, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("marshal old object failed: %v", err)
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return nil, fmt.Errorf("marshal new object failed: %v", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(a, b, schema)
	if err != nil {
		return nil, fmt.Errorf("CreateTwoWayMergePatch failed: %v", err)
	}
	return patch, nil
}

// withResourceVersion makes a patch conditional on resourceVersion.
func withResourceVersion(patch []byte, resourceVersion string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("error unmarshalling patch with %v", err)
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = resourceVersion
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("error marshalling json patch with %v", err)
	}
	return out, nil
}
