package profile

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects are what deploying the profile's driver puts in a cluster: its
// CSIDriver object with the profile's csiDriver fields (attachRequired
// defaulting to whether the driver has ControllerPublishVolume, see
// AttachRequired), and a StorageClass named className that provisions
// with it and the profile's parameters, reclaim policy Delete, binding
// Immediate, marked as the default class. driverName, if not empty,
// replaces the profile's name (a driver started under another name).
func (p *Profile) Objects(driverName, className string) (*storagev1.CSIDriver, *storagev1.StorageClass) {
	if driverName == "" {
		driverName = p.Name
	}
	attach, podInfo := p.AttachRequired(), p.Has(PodInfo)
	var modes []storagev1.VolumeLifecycleMode
	for _, m := range p.LifecycleModes() {
		modes = append(modes, storagev1.VolumeLifecycleMode(m))
	}
	drv := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driverName},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: &attach, PodInfoOnMount: &podInfo, VolumeLifecycleModes: modes},
	}
	if policy := p.fsGroupPolicy(); policy != "" {
		fsGroupPolicy := storagev1.FSGroupPolicy(policy)
		drv.Spec.FSGroupPolicy = &fsGroupPolicy
	}
	for _, t := range p.CSIDriver.TokenRequests {
		drv.Spec.TokenRequests = append(drv.Spec.TokenRequests, storagev1.TokenRequest{Audience: t.Audience, ExpirationSeconds: t.ExpirationSeconds})
	}
	if p.CSIDriver.RequiresRepublish {
		drv.Spec.RequiresRepublish = &p.CSIDriver.RequiresRepublish
	}
	if p.CSIDriver.SELinuxMount {
		drv.Spec.SELinuxMount = &p.CSIDriver.SELinuxMount
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

// ExtraObjects are Objects for a driver started beside the first one under
// driverName (serve --extra-driver, a scenario's drivers:): its
// StorageClass, named driverName, is not marked default. Two default
// classes would make the API server's admission give a claim without a
// class the newest of them, so which driver provisions it would depend on
// the second the classes were created in.
func (p *Profile) ExtraObjects(driverName string) (*storagev1.CSIDriver, *storagev1.StorageClass) {
	drv, sc := p.Objects(driverName, driverName)
	delete(sc.Annotations, "storageclass.kubernetes.io/is-default-class")
	return drv, sc
}
