package pvcontroller

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// syncVolume is the binder's sync of a volume: it keeps the volume's phase
// (Available, Bound, Released) in step with its claimRef and that claim,
// runs the reclaim policy of a released volume and undoes a binding whose
// claim went to another volume.
func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		c.volumeVersions.forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	if !c.volumeVersions.fresh(name, pv.ResourceVersion) {
		return nil // the informer is behind the binder's own writes
	}
	if pv, err = c.annealVolume(ctx, pv); err != nil {
		return err
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		// Unused, or reserved for a claim (by an admin) that the claim's
		// own sync binds: the volume does not hurry it along.
		_, err := c.setVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
		return err
	}
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if claim != nil && claim.UID != ref.UID {
		claim = nil // deleted, and another made with the same name
	}
	switch {
	case claim == nil:
		// The claim is gone: the volume is Released (a Failed one stays
		// Failed) and its reclaim policy runs, again at every sync.
		if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
			if pv, err = c.setVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return c.reclaim(ctx, pv)
	case claim.Spec.VolumeName == "":
		if volumeModeMismatch(claim, pv) {
			c.events.Event(pv, corev1.EventTypeWarning, "VolumeMismatch", fmt.Sprintf(
				"Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name))
			c.events.Event(claim, corev1.EventTypeWarning, "VolumeMismatch", fmt.Sprintf(
				"Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name))
			return nil
		}
		// Bound by a provisioner or the scheduler and waiting for the
		// claim's side: hurry the claim's sync along.
		c.claimQ.Add(claim.Namespace + "/" + claim.Name)
		return nil
	case claim.Spec.VolumeName == pv.Name:
		_, err := c.setVolumePhase(ctx, pv, corev1.VolumeBound, "")
		return err
	case pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != "" && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that got another volume: not needed.
		if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
			if pv, err = c.setVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return c.reclaim(ctx, pv)
	default:
		// The claim is bound to another volume: undo this binding.
		return c.unbindVolume(ctx, pv)
	}
}

// unbindVolume makes the volume Available again: a binding the controller
// made is removed, an admin's claimRef keeps its name and loses its UID.
func (c *Controller) unbindVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	v := pv.DeepCopy()
	if _, ok := pv.Annotations[storagehelpers.AnnBoundByController]; ok {
		v.Spec.ClaimRef = nil
		delete(v.Annotations, storagehelpers.AnnBoundByController)
		if len(v.Annotations) == 0 {
			v.Annotations = nil
		}
	} else {
		v.Spec.ClaimRef.UID = ""
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("unbinding volume %s: %w", pv.Name, err)
	}
	c.volumeVersions.wrote(updated.Name, updated.ResourceVersion)
	_, err = c.setVolumePhase(ctx, updated, corev1.VolumeAvailable, "")
	return err
}

// reclaim carries out a Released volume's reclaim policy. Retain does
// nothing: the volume, its claimRef and its data stay until an admin acts.
// Delete of a CSI volume, a migrated one, or one an external provisioner
// made is that provisioner's work (it deletes a volume it provisioned); the
// controller itself can only delete host paths under /tmp, and fails every
// other volume. Recycle (deprecated, for NFS and host paths) is not
// modelled: such a volume stays Released.
func (c *Controller) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Annotations[storagehelpers.AnnMigratedTo] != "" || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	if by := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]; by != "" && !strings.HasPrefix(by, "kubernetes.io/") {
		return nil
	}
	if pv.Spec.CSI != nil {
		return nil
	}
	if err := deleteInTree(pv); err != nil {
		_, uerr := c.setVolumePhaseWithEvent(ctx, pv, corev1.VolumeFailed, corev1.EventTypeWarning, "VolumeFailedDelete", err.Error())
		return uerr // the next sync tries again, quietly
	}
	err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

var tmpPath = regexp.MustCompile("/tmp/.+")

// deleteInTree is what kube-controller-manager's remaining in-tree volume
// plugins do with a volume to delete: only the host-path plugin deletes,
// and only under /tmp (the simulator does not remove the directory).
func deleteInTree(pv *corev1.PersistentVolume) error {
	if hp := pv.Spec.HostPath; hp != nil {
		if !tmpPath.MatchString(hp.Path) {
			return fmt.Errorf("host_path deleter only supports /tmp/.+ but received provided %s", hp.Path)
		}
		return nil
	}
	// kube-controller-manager's PV controller has the host-path and NFS
	// plugins (cmd/kube-controller-manager/app/plugins.go,
	// ProbeProvisionableRecyclableVolumePlugins): NFS supports the spec but
	// deletes nothing; no plugin supports any other spec (the removed rbd,
	// cephfs..., an in-tree cloud disk made by hand: FindPluginBySpec).
	reason := "no volume plugin matched"
	if pv.Spec.NFS != nil {
		reason = "no deletable volume plugin matched"
	}
	return fmt.Errorf("error getting deleter volume plugin for volume %q: %w", pv.Name, errors.New(reason))
}

// setVolumePhase sets the volume's phase and message, if the phase is not
// phase already.
func (c *Controller) setVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, message string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase {
		return pv, nil
	}
	v := pv.DeepCopy()
	v.Status.Phase = phase
	v.Status.Message = message
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	v.Status.LastPhaseTransitionTime = &now
	updated, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, v, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting volume %s phase %s: %w", pv.Name, phase, err)
	}
	c.volumeVersions.wrote(updated.Name, updated.ResourceVersion)
	return updated, nil
}

// setVolumePhaseWithEvent sets the phase and reports it, once.
func (c *Controller) setVolumePhaseWithEvent(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, eventType, reason, message string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase {
		return pv, nil
	}
	updated, err := c.setVolumePhase(ctx, pv, phase, message)
	if err != nil {
		return nil, err
	}
	c.events.Event(updated, eventType, reason, message)
	return updated, nil
}
