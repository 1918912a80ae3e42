package profile

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects are what deploying the profile's driver puts in a cluster: its
// CSIDriver object, as the capabilities say (attachRequired from attach,
// podInfoOnMount from podInfo, fsGroupPolicy, the Ephemeral lifecycle mode
// with ephemeral), and a StorageClass named className that provisions with
// it and the profile's parameters, reclaim policy Delete, binding
// Immediate, marked as the default class. driverName, if not empty,
// replaces the profile's name (a driver started under another name).
func (p *Profile) Objects(driverName, className string) (*storagev1.CSIDriver, *storagev1.StorageClass) {
	if driverName == "" {
		driverName = p.Name
	}
	attach, podInfo := p.Has(Attach), p.Has(PodInfo)
	modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	if p.Has(Ephemeral) {
		modes = append(modes, storagev1.VolumeLifecycleEphemeral)
	}
	drv := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: &attach, PodInfoOnMount: &podInfo, VolumeLifecycleModes: modes},
	}
	if p.FSGroupPolicy != "" {
		policy := storagev1.FSGroupPolicy(p.FSGroupPolicy)
		drv.Spec.FSGroupPolicy = &policy
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	params := maps.Clone(p.StorageClass.Parameters)
	if p.StorageClass.FSType != "" {
		if params == nil {
			params = map[string]string{}
		}
		params["csi.storage.k8s.io/fstype"] = p.StorageClass.FSType
	}
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        className,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       driverName,
		Parameters:        params,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
	return drv, sc
}
