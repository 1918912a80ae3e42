package pvcontroller

// CSI migration in the PV controller — models kubernetes
// pkg/controller/volume/persistentvolume/pv_controller_base.go
// (updateMigrationAnnotations, updateClaimMigrationAnnotations,
// updateVolumeMigrationAnnotationsAndFinalizers, modifyDeletionFinalizers)
// and pv_controller.go (provisionClaimOperationExternal). A claim handed
// to an in-tree plugin, or a volume one provisioned, is annotated
// pv.kubernetes.io/migrated-to with the CSI driver the plugin migrated to,
// at the start of every sync of it: the driver's external-provisioner then
// provisions and deletes for it and the controller stands down.

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/sim/migration"
)

// migrationAnnotations sets or removes migrated-to in ann by the
// provisioner under key (a claim's storage-provisioner, beta as the
// fallback; a volume's provisioned-by) and says whether it changed ann.
// A statically made volume has no provisioner and is left alone.
func migrationAnnotations(ann map[string]string, claim bool) bool {
	if ann == nil {
		return false
	}
	provisioner, ok := ann[storagehelpers.AnnDynamicallyProvisioned]
	if claim {
		provisioner, ok = ann[storagehelpers.AnnStorageProvisioner]
		if !ok {
			provisioner, ok = ann[storagehelpers.AnnBetaStorageProvisioner]
		}
	}
	if !ok {
		return false
	}
	driver, migrated := migration.DriverFor(provisioner)
	switch {
	case migrated && ann[storagehelpers.AnnMigratedTo] != driver:
		ann[storagehelpers.AnnMigratedTo] = driver
		return true
	case !migrated && ann[storagehelpers.AnnMigratedTo] != "":
		delete(ann, storagehelpers.AnnMigratedTo) // a rollback
		return true
	}
	return false
}

// annealClaim writes the claim's migration annotation if it changes, and
// returns the claim as it now is.
func (c *Controller) annealClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	cl := claim.DeepCopy()
	if !migrationAnnotations(cl.Annotations, true) {
		return claim, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("persistent Volume Controller can't anneal migration annotations: %v", err)
	}
	c.wroteClaim(updated)
	return updated, nil
}

// annealVolume writes the volume's migration annotation and, for a volume
// an in-tree plugin provisioned whose migration is on, takes off the
// in-tree deletion-protection finalizer (the external-provisioner's goes
// on instead); it returns the volume as it now is.
func (c *Controller) annealVolume(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	v := pv.DeepCopy()
	changed := migrationAnnotations(v.Annotations, false)
	if _, migrated := migration.DriverFor(v.Annotations[storagehelpers.AnnDynamicallyProvisioned]); migrated &&
		slices.Contains(v.Finalizers, storagehelpers.PVDeletionInTreeProtectionFinalizer) {
		v.Finalizers = slices.DeleteFunc(v.Finalizers, func(f string) bool { return f == storagehelpers.PVDeletionInTreeProtectionFinalizer })
		changed = true
	}
	if !changed {
		return pv, nil
	}
	updated, err := c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("persistent Volume Controller can't anneal migration annotations or finalizer: %v", err)
	}
	c.volumeVersions.wrote(updated.Name, updated.ResourceVersion)
	return updated, nil
}

// provisionerName is the provisioner a claim of the class is handed to:
// the CSI driver an in-tree plugin migrated to, else the class's own.
func provisionerName(class string) string {
	if driver, ok := migration.DriverFor(class); ok {
		return driver
	}
	return class
}
