package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// syncVolume is the sidecar's volume sync (sig-storage-lib-external-
// provisioner's, with the finalizer option the external-provisioner turns
// on): for a volume of this driver it keeps the finalizer in step with the
// reclaim policy, and deletes the volume once it is Released with reclaim
// policy Delete.
func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !p.handles(pv) {
		return nil
	}
	if pv, err = p.protect(ctx, pv); err != nil {
		return err
	}
	if !shouldDelete(pv) {
		return nil
	}
	// The cache may lag behind our own last write (the deletion we just
	// made); ask the API server before deleting again.
	pv, err = p.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !shouldDelete(pv) {
		return nil
	}
	return p.deleteVolume(ctx, pv)
}

// handles says whether the volume is this driver's: one it provisioned
// (the provisioned-by annotation, or the driver an in-tree volume was
// migrated to), or, without that annotation, a CSI volume of the driver
// made by hand.
func (p *Provisioner) handles(pv *corev1.PersistentVolume) bool {
	driver := p.cfg.DriverName
	if by, ok := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]; ok {
		return by == driver || pv.Annotations[storagehelpers.AnnMigratedTo] == driver
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver == driver
	}
	return pv.Annotations[storagehelpers.AnnMigratedTo] == driver
}

// protect adds the finalizer to a bound volume with reclaim policy Delete
// that is not being deleted, and takes it off a volume whose policy is now
// Retain or Recycle; it returns the volume as written.
func (p *Provisioner) protect(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	has := slices.Contains(pv.Finalizers, storagehelpers.PVDeletionProtectionFinalizer)
	policy := pv.Spec.PersistentVolumeReclaimPolicy
	var finalizers []string
	switch {
	case !has && policy == corev1.PersistentVolumeReclaimDelete && pv.DeletionTimestamp == nil && pv.Status.Phase == corev1.VolumeBound:
		finalizers = append(slices.Clone(pv.Finalizers), storagehelpers.PVDeletionProtectionFinalizer)
	case has && (policy == corev1.PersistentVolumeReclaimRetain || policy == corev1.PersistentVolumeReclaimRecycle):
		finalizers = slices.DeleteFunc(slices.Clone(pv.Finalizers), func(f string) bool { return f == storagehelpers.PVDeletionProtectionFinalizer })
	default:
		return pv, nil
	}
	out, err := p.patchFinalizers(ctx, pv, finalizers)
	if err != nil {
		return pv, fmt.Errorf("failed to modify finalizers to %+v on volume %s err: %w", finalizers, pv.Name, err)
	}
	return out, nil
}

// patchFinalizers sets the volume's finalizers with a strategic merge
// patch, as the sidecar does: it adds or removes the one finalizer
// without a resourceVersion, so a stale cache is no conflict.
func (p *Provisioner) patchFinalizers(ctx context.Context, pv *corev1.PersistentVolume, finalizers []string) (*corev1.PersistentVolume, error) {
	oldData, err := json.Marshal(pv)
	if err != nil {
		return nil, err
	}
	v := pv.DeepCopy()
	v.Finalizers = finalizers
	newData, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, &corev1.PersistentVolume{})
	if err != nil {
		return nil, err
	}
	return p.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
}

// shouldDelete: the volume is Released with reclaim policy Delete, and
// not already deleted by us (being deleted, with our finalizer gone).
func shouldDelete(pv *corev1.PersistentVolume) bool {
	if pv.DeletionTimestamp != nil && !slices.Contains(pv.Finalizers, storagehelpers.PVDeletionProtectionFinalizer) {
		return false
	}
	return pv.Status.Phase == corev1.VolumeReleased &&
		pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete
}

// deleteVolume calls DeleteVolume, deletes the PV and then lets it go by
// removing the finalizer, in the sidecar's order. A failure is a
// VolumeFailedDelete event and a retry.
func (p *Provisioner) deleteVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	name := pv.Name
	if err := p.deleteBacking(ctx, pv); err != nil {
		// A volume still attached is no failure but a wait: the sidecar
		// says so in a Normal VolumeDelete event (the provisioner library's
		// IgnoredError), as the real csi-provisioner v6.4.0 does.
		var wait *stillAttached
		if errors.As(err, &wait) {
			p.events.Eventf(pv, corev1.EventTypeNormal, "VolumeDelete", "%v", err)
		} else {
			p.events.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "%v", err)
		}
		return fmt.Errorf("deleting the volume of PV %s: %w", name, err)
	}
	p.refreshCapacityOfVolume(pv)
	if err := p.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting PV %s: %w", name, err)
	}
	cur, err := p.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && !slices.Contains(cur.Finalizers, storagehelpers.PVDeletionProtectionFinalizer)) {
		return nil
	}
	if err == nil {
		_, err = p.patchFinalizers(ctx, cur, slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == storagehelpers.PVDeletionProtectionFinalizer }))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer from PV %s: %w", name, err)
	}
	return nil
}

// deleteBacking is the sidecar's Delete: never while the volume is
// attached, with the provisioner secret, then DeleteVolume. Its errors
// are the event's message.
func (p *Provisioner) deleteBacking(ctx context.Context, pv *corev1.PersistentVolume) error {
	// A volume in an in-tree form whose plugin migrated here (the PV
	// controller's migrated-to handed it over) is deleted as the CSI
	// volume it translates to (csiProvisioner.Delete: IsPVMigratable).
	pv, _, err := migration.PV(pv)
	if err != nil {
		return err
	}
	if pv.Spec.CSI == nil {
		return fmt.Errorf("invalid CSI PV")
	}
	if node := p.attachedTo(pv.Name); node != "" {
		return &stillAttached{pv: pv.Name, node: node}
	}
	if err := p.checkDriverCapabilities(nil); err != nil {
		return err
	}
	secrets, err := p.deletionSecrets(ctx, pv)
	if err != nil {
		return err
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	_, err = p.csi.DeleteVolume(callCtx, &csi.DeleteVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle, Secrets: secrets})
	return err
}

// deletionSecrets is the provisioner secret for DeleteVolume: the one the
// PV's deletion-secret annotations name (a provisioned volume), else the
// one its storage class names for its claim (a volume made by hand). A
// secret that cannot be read is left out, as the sidecar does: it may
// have been deleted already.
func (p *Provisioner) deletionSecrets(ctx context.Context, pv *corev1.PersistentVolume) (map[string]string, error) {
	name, hasName := pv.Annotations[AnnDeletionSecretName]
	namespace, hasNamespace := pv.Annotations[AnnDeletionSecretNamespace]
	var ref *corev1.SecretReference
	switch {
	case hasName && hasNamespace:
		if name == "" || namespace == "" {
			return nil, nil
		}
		ref = &corev1.SecretReference{Name: name, Namespace: namespace}
	default:
		class, err := p.classes.Get(pv.Spec.StorageClassName)
		if pv.Spec.StorageClassName == "" || err != nil || pv.Spec.ClaimRef == nil {
			return nil, nil // deleted without secrets
		}
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pv.Spec.ClaimRef.Name, Namespace: pv.Spec.ClaimRef.Namespace}}
		if ref, err = secretRef(class.Parameters, provisionerSecret, claim, pv.Name); err != nil {
			return nil, fmt.Errorf("failed to get secretreference for volume %s: %v", pv.Name, err)
		}
	}
	secrets, err := p.secretData(ctx, ref)
	if err != nil {
		return nil, nil // deleted without secrets
	}
	return secrets, nil
}

// attachedTo is the node a VolumeAttachment attaches the volume to, ""
// for none. The sidecar watches VolumeAttachments only for a driver with
// PUBLISH_UNPUBLISH_VOLUME (cmd/csi-provisioner/csi-provisioner.go); for
// another it has nothing to check (canDeleteVolume).
func (p *Provisioner) attachedTo(pvName string) string {
	if !p.cfg.Capabilities.Controller[csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME] {
		return ""
	}
	vas, _ := volumeutil.ByIndex[*storagev1.VolumeAttachment](p.vaIndex, volumeutil.AttachmentsByVolume, pvName)
	if len(vas) == 0 {
		return ""
	}
	return vas[0].Spec.NodeName
}

// stillAttached is why a volume is not deleted yet: a VolumeAttachment
// still attaches it to node.
type stillAttached struct{ pv, node string }

func (e *stillAttached) Error() string {
	return fmt.Sprintf("persistentvolume %s is still attached to node %s, waiting for detach", e.pv, e.node)
}
