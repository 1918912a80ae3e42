package fakekube

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The annotations that mark the StorageClass claims without one get (the
// beta one is still honoured by the real plugin).
const (
	annDefaultStorageClass     = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultStorageClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// admitLocked runs the mutating admission plugins of a default API server
// that need to look at other objects: DefaultStorageClass gives a claim
// that names no class the default one.
func (s *store) admitLocked(obj runtime.Object) {
	if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && pvc.Spec.StorageClassName == nil {
		if name := s.defaultStorageClassLocked(); name != "" {
			pvc.Spec.StorageClassName = &name
		}
	}
}

// defaultStorageClassLocked is the default StorageClass: of several, the
// newest (then the first by name), as the real plugin picks.
func (s *store) defaultStorageClassLocked() string {
	var best *storagev1.StorageClass
	for _, o := range s.objects[s.reg.byGVR[storageV1.WithResource("storageclasses")]] {
		sc := o.(*storagev1.StorageClass)
		if sc.Annotations[annDefaultStorageClass] != "true" && sc.Annotations[annBetaDefaultStorageClass] != "true" {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}
