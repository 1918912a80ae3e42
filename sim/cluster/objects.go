package cluster

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/sim/volumeutil"
)

// DefaultStorageClass is the name of the StorageClass DriverObjects makes:
// the name of the default class everywhere, as a profile's (csisim serve
// --driver, csisimtest) and the scenario library's.
const DefaultStorageClass = profile.StorageClassName

// DriverObjects are what deploying the driver puts in a cluster: its
// CSIDriver object (volumes are attached, pod information on mount,
// persistent and ephemeral volumes) and a default StorageClass that
// provisions with it, reclaim policy Delete, binding Immediate.
func DriverObjects(driverName string) (*storagev1.CSIDriver, *storagev1.StorageClass) {
	attach := true
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	drv := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: driverName},
		// As scenarios/library/manifests/driver.yaml: pod information
		// on mount, and inline ephemeral volumes besides claims'.
		Spec: storagev1.CSIDriverSpec{AttachRequired: &attach, PodInfoOnMount: &attach,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}},
	}
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultStorageClass,
			Annotations: map[string]string{volumeutil.AnnDefaultStorageClass: "true"},
		},
		Provisioner:       driverName,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
	return drv, sc
}
