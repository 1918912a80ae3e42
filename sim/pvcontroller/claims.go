package pvcontroller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/sim/volumeutil"
)

// syncClaim is the binder's sync of a claim: a claim with
// pv.kubernetes.io/bind-completed is kept bound (or found Lost), one that
// names its volume is bound to it if it can be, any other gets the best
// matching volume, a provisioner, or an event that says why it waits.
func (c *Controller) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.claimVersions.forget(key)
		return nil // its volume learns of it through its own sync
	}
	if err != nil {
		return err
	}
	if !c.claimVersions.fresh(key, claim.ResourceVersion) {
		return nil // the informer is behind the binder's own writes
	}
	if claim, err = c.annealClaim(ctx, claim); err != nil {
		return err
	}
	if _, done := claim.Annotations[storagehelpers.AnnBindCompleted]; done {
		return c.syncBoundClaim(ctx, claim)
	}
	if claim.Spec.VolumeName != "" {
		return c.syncRequestedVolume(ctx, claim)
	}
	return c.syncUnboundClaim(ctx, claim)
}

// syncUnboundClaim binds a claim that names no volume to the best matching
// one, or has a volume provisioned, or waits.
func (c *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	delayed, err := c.delayBinding(claim)
	if err != nil {
		return err
	}
	candidates, err := c.candidateVolumes(claim)
	if err != nil {
		return err
	}
	if pv := bestMatch(claim, candidates, delayed); pv != nil {
		return c.bind(ctx, pv, claim)
	}
	if assigned, err := c.assignDefaultClass(ctx, claim); err != nil || assigned {
		return err // the update brings the claim back
	}
	switch {
	case delayed && claim.Annotations[storagehelpers.AnnSelectedNode] == "":
		c.emitWaitingForConsumer(claim)
	case storagehelpers.GetPersistentVolumeClaimClass(claim) != "":
		// Provisioning is the external provisioner's; the claim stays
		// Pending until its volume is bound.
		return c.provision(ctx, claim)
	default:
		c.events.Event(claim, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
	}
	_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
	return err
}

// candidateVolumes are the volumes a claim could bind to: those bound to
// no claim and those whose claimRef names it (bestMatch skips the rest),
// by name as a list of all would give them.
func (c *Controller) candidateVolumes(claim *corev1.PersistentVolumeClaim) ([]*corev1.PersistentVolume, error) {
	free, err := volumeutil.ByIndex[*corev1.PersistentVolume](c.volumeIndex, volumeutil.VolumesByClaim, "")
	if err != nil {
		return nil, err
	}
	mine, err := volumeutil.ByIndex[*corev1.PersistentVolume](c.volumeIndex, volumeutil.VolumesByClaim, claim.Namespace+"/"+claim.Name)
	if err != nil {
		return nil, err
	}
	all := append(free, mine...)
	slices.SortFunc(all, func(a, b *corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

// claimPods are the pods in the claim's namespace that use it.
func (c *Controller) claimPods(claim *corev1.PersistentVolumeClaim) ([]*corev1.Pod, error) {
	return volumeutil.ByIndex[*corev1.Pod](c.podIndex, volumeutil.PodsByClaim, claim.Namespace+"/"+claim.Name)
}

// syncRequestedVolume binds a claim to the volume its spec.volumeName
// names, if that volume is free (or pre-bound to it) and satisfies it.
func (c *Controller) syncRequestedVolume(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err // it may still come
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		if why := checkRequested(pv, claim); why != nil {
			c.events.Event(claim, corev1.EventTypeWarning, "VolumeMismatch", fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, why))
			_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
			return err
		}
		return c.bind(ctx, pv, claim)
	case boundToClaim(pv, claim):
		return c.bind(ctx, pv, claim)
	default:
		c.events.Event(claim, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("volume %q already bound to a different claim.", pv.Name))
		if _, byController := claim.Annotations[storagehelpers.AnnBoundByController]; byController {
			return fmt.Errorf("invalid binding of claim %s/%s to volume %q: volume already claimed by %s/%s",
				claim.Namespace, claim.Name, pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
		}
		_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimPending, nil)
		return err
	}
}

// syncBoundClaim keeps a claim that was bound bound, or marks it Lost.
func (c *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if claim.Spec.VolumeName == "" {
		return c.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, "ClaimLost",
			"Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return c.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, "ClaimLost",
			"Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	}
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == claim.UID {
		return c.bind(ctx, pv, claim)
	}
	return c.updateClaimStatusWithEvent(ctx, claim, corev1.ClaimLost, "ClaimMisbound",
		"Two claims are bound to the same volume, this one is bound incorrectly")
}

// bind saves the binding on the volume (claimRef, then phase Bound) and
// then on the claim (volumeName and annotations, then phase Bound), as the
// real controller does, so that a failure in between leaves a state the
// next sync finishes. Only what is not yet so is written.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.bindVolume(ctx, pv, claim)
	if err != nil {
		return err
	}
	if pv, err = c.setVolumePhase(ctx, pv, corev1.VolumeBound, ""); err != nil {
		return err
	}
	if claim, err = c.bindClaim(ctx, claim, pv); err != nil {
		return err
	}
	_, err = c.updateClaimStatus(ctx, claim, corev1.ClaimBound, pv)
	return err
}

// bindVolume points the volume's claimRef at the claim. A volume that was
// not already meant for this claim (by an admin's or a provisioner's
// claimRef) is marked pv.kubernetes.io/bound-by-controller.
func (c *Controller) bindVolume(ctx context.Context, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	v := pv.DeepCopy()
	dirty := false
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name || ref.UID != claim.UID {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion}
		dirty = true
	}
	if _, marked := pv.Annotations[storagehelpers.AnnBoundByController]; !marked && !boundToClaim(pv, claim) {
		setAnnotation(&v.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
		dirty = true
	}
	if !dirty {
		return pv, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("binding volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
	}
	c.volumeVersions.wrote(updated.Name, updated.ResourceVersion)
	return updated, nil
}

// bindClaim sets the claim's volumeName and bind-completed. A claim whose
// volumeName the controller chose is marked bound-by-controller; one that
// asked for its volume by name is not.
func (c *Controller) bindClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	cl := claim.DeepCopy()
	dirty := false
	if claim.Spec.VolumeName != pv.Name {
		cl.Spec.VolumeName = pv.Name
		if _, marked := claim.Annotations[storagehelpers.AnnBoundByController]; !marked {
			setAnnotation(&cl.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
		}
		dirty = true
	}
	if _, done := claim.Annotations[storagehelpers.AnnBindCompleted]; !done {
		setAnnotation(&cl.ObjectMeta, storagehelpers.AnnBindCompleted, "yes")
		dirty = true
	}
	if !dirty {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("binding claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, pv.Name, err)
	}
	c.wroteClaim(updated)
	return updated, nil
}

// updateClaimStatus sets the claim's phase; with a volume, its access
// modes and (when the claim becomes Bound) its capacity and current
// VolumeAttributesClass from the volume, without one it clears them
// (kubernetes pkg/controller/volume/persistentvolume/pv_controller.go).
func (c *Controller) updateClaimStatus(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	cl := claim.DeepCopy()
	dirty := claim.Status.Phase != phase
	cl.Status.Phase = phase
	if pv == nil {
		if claim.Status.AccessModes != nil || claim.Status.Capacity != nil || claim.Status.CurrentVolumeAttributesClassName != nil {
			cl.Status.AccessModes, cl.Status.Capacity, cl.Status.CurrentVolumeAttributesClassName = nil, nil, nil
			dirty = true
		}
	} else {
		if !reflect.DeepEqual(claim.Status.AccessModes, pv.Spec.AccessModes) {
			cl.Status.AccessModes = pv.Spec.AccessModes
			dirty = true
		}
		if claim.Status.Phase != phase {
			have, ok := claim.Status.Capacity[corev1.ResourceStorage]
			want := pv.Spec.Capacity[corev1.ResourceStorage]
			if !ok || have.Cmp(want) != 0 {
				cl.Status.Capacity = pv.Spec.Capacity
				dirty = true
			}
		}
		// The class the volume has when the claim becomes Bound: only then,
		// since afterwards the external-resizer owns the field.
		if claim.Status.Phase == corev1.ClaimPending && phase == corev1.ClaimBound &&
			!reflect.DeepEqual(claim.Status.CurrentVolumeAttributesClassName, pv.Spec.VolumeAttributesClassName) {
			cl.Status.CurrentVolumeAttributesClassName = pv.Spec.VolumeAttributesClassName
			dirty = true
		}
	}
	if !dirty {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting claim %s/%s phase %s: %w", claim.Namespace, claim.Name, phase, err)
	}
	c.wroteClaim(updated)
	return updated, nil
}

// updateClaimStatusWithEvent moves the claim to phase without a volume and
// reports it, once: nothing happens when the claim is in phase already.
func (c *Controller) updateClaimStatusWithEvent(ctx context.Context, claim *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, reason, message string) error {
	if claim.Status.Phase == phase {
		return nil
	}
	updated, err := c.updateClaimStatus(ctx, claim, phase, nil)
	if err != nil {
		return err
	}
	c.events.Event(updated, corev1.EventTypeWarning, reason, message)
	return nil
}

// delayBinding: the claim's class binds at the first consumer. A class
// that does not exist does not delay.
func (c *Controller) delayBinding(claim *corev1.PersistentVolumeClaim) (bool, error) {
	name := storagehelpers.GetPersistentVolumeClaimClass(claim)
	if name == "" {
		return false, nil
	}
	class, err := c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if class.VolumeBindingMode == nil {
		return false, fmt.Errorf("VolumeBindingMode not set for StorageClass %q", name)
	}
	return *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// emitWaitingForConsumer explains a WaitForFirstConsumer claim that waits:
// for a pod to use it, or for the scheduler to place the pods that do.
func (c *Controller) emitWaitingForConsumer(claim *corev1.PersistentVolumeClaim) {
	pods, _ := c.claimPods(claim)
	var waiting []string
	for _, pod := range pods {
		if terminated(pod) || pod.Spec.NodeName != "" || !usesClaim(pod, claim) {
			continue
		}
		waiting = append(waiting, pod.Name)
	}
	sort.Strings(waiting)
	switch len(waiting) {
	case 0:
		c.events.Event(claim, corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
	case 1:
		c.events.Event(claim, corev1.EventTypeNormal, "WaitForPodScheduled", fmt.Sprintf("waiting for pod %s to be scheduled", waiting[0]))
	default:
		c.events.Event(claim, corev1.EventTypeNormal, "WaitForPodScheduled", fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(waiting, ",")))
	}
}

// assignDefaultClass gives a claim that names no class at all the default
// class, once one exists (retroactive default StorageClass assignment).
func (c *Controller) assignDefaultClass(ctx context.Context, claim *corev1.PersistentVolumeClaim) (bool, error) {
	if storagehelpers.PersistentVolumeClaimHasClass(claim) {
		return false, nil
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return false, err
	}
	var def *storagev1.StorageClass
	for _, class := range classes {
		if class.Annotations[volumeutil.AnnDefaultStorageClass] != "true" {
			continue
		}
		// Of several defaults the newest wins, then the name.
		if def == nil || class.CreationTimestamp.After(def.CreationTimestamp.Time) ||
			(class.CreationTimestamp.Equal(&def.CreationTimestamp) && class.Name < def.Name) {
			def = class
		}
	}
	if def == nil {
		return false, nil
	}
	cl := claim.DeepCopy()
	cl.Spec.StorageClassName = &def.Name
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("assigning default class %s to claim %s/%s: %w", def.Name, claim.Namespace, claim.Name, err)
	}
	c.wroteClaim(updated)
	return true, nil
}

// provision hands the claim to its class's external provisioner through
// the storage-provisioner annotations and says so, at every sync while
// the claim waits, as the real controller does. In-tree provisioners
// (kubernetes.io/...) are all gone from kube-controller-manager.
func (c *Controller) provision(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	name := storagehelpers.GetPersistentVolumeClaimClass(claim)
	class, err := c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		c.events.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("storageclass.storage.k8s.io %q not found", name))
		return nil
	}
	if err != nil {
		return err
	}
	// An in-tree plugin that migrated hands its claims to its CSI driver.
	provisioner := provisionerName(class.Provisioner)
	if strings.HasPrefix(provisioner, "kubernetes.io/") {
		c.events.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", "no volume plugin matched name: "+class.Provisioner)
		return nil
	}
	if claim.Annotations[storagehelpers.AnnStorageProvisioner] != provisioner || claim.Annotations[storagehelpers.AnnBetaStorageProvisioner] != provisioner {
		cl := claim.DeepCopy()
		setAnnotation(&cl.ObjectMeta, storagehelpers.AnnStorageProvisioner, provisioner)
		setAnnotation(&cl.ObjectMeta, storagehelpers.AnnBetaStorageProvisioner, provisioner)
		migrationAnnotations(cl.Annotations, true)
		updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
		if err != nil {
			c.events.Event(claim, corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("Error saving claim: %v", err))
			return fmt.Errorf("handing claim %s/%s to provisioner %s: %w", claim.Namespace, claim.Name, provisioner, err)
		}
		c.wroteClaim(updated)
		claim = updated
	}
	c.events.Event(claim, corev1.EventTypeNormal, "ExternalProvisioning", fmt.Sprintf(
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
			"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", provisioner))
	return nil
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// usesClaim: a persistentVolumeClaim volume names the claim, or a generic
// ephemeral volume's claim <pod>-<volume> is it and was made for the pod
// (the real pvc-protection controller's podUsesPVC).
func usesClaim(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if name, ok := volumeutil.ClaimName(pod, v); ok && name == claim.Name &&
			(v.Ephemeral == nil || ephemeral.VolumeIsForPod(pod, claim) == nil) {
			return true
		}
	}
	return false
}

// wroteClaim remembers the version of the claim a write of the binder
// returned.
func (c *Controller) wroteClaim(claim *corev1.PersistentVolumeClaim) {
	c.claimVersions.wrote(claim.Namespace+"/"+claim.Name, claim.ResourceVersion)
}
