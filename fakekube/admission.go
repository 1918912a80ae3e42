package fakekube

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The annotations that mark the StorageClass claims without one get (the
// beta one is still honoured by the real plugin).
const (
	annDefaultStorageClass     = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultStorageClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// undeletableNamespaces are the namespaces the NamespaceLifecycle
// admission plugin refuses to delete: default, kube-system and
// kube-public (its immortalNamespaces; kube-node-lease may go).
var undeletableNamespaces = map[string]bool{
	metav1.NamespaceDefault: true, metav1.NamespaceSystem: true, metav1.NamespacePublic: true,
}

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

// validateAdmissionLocked runs the validating admission plugins of a
// default API server that judge updates: PersistentVolumeClaimResize lets
// a claim's storage request grow only when the claim is bound and its
// class allows expansion
// (kubernetes plugin/pkg/admission/storage/persistentvolume/resize/admission.go).
func (s *store) validateAdmissionLocked(res *resource, name string, obj, old runtime.Object) error {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	was := old.(*corev1.PersistentVolumeClaim)
	newSize := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := was.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if was.Status.Phase != corev1.ClaimBound {
		//lint:ignore ST1005 the real plugin's words
		return apierrors.NewForbidden(res.groupResource(), name, errors.New("Only bound persistent volume claims can be expanded"))
	}
	if !s.allowsResizeLocked(claimClass(claim), claimClass(was)) {
		return apierrors.NewForbidden(res.groupResource(), name, errors.New("only dynamically provisioned pvc can be resized and "+
			"the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// allowsResizeLocked says whether the class, the same before and after,
// exists and sets allowVolumeExpansion: true.
func (s *store) allowsResizeLocked(class, was string) bool {
	if class == "" || was == "" || class != was {
		return false
	}
	o, ok := s.objects[s.reg.byGVR[storageV1.WithResource("storageclasses")]][objectKey("", class)]
	if !ok {
		return false
	}
	sc := o.(*storagev1.StorageClass)
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}

// claimClass is a claim's class: its beta annotation, else its field.
func claimClass(claim *corev1.PersistentVolumeClaim) string {
	if class, ok := claim.Annotations[annBetaStorageClass]; ok {
		return class
	}
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return ""
}
