package fakekube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Finalizers added on creation by the API server's
// StorageObjectInUseProtection admission plugin.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }

// prepareForCreate does what the real server's create strategies and
// admission plugins do before validation: reset status and add finalizers.
func prepareForCreate(res *resource, obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case *corev1.PersistentVolumeClaim:
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		addFinalizer(&o.ObjectMeta, PVCProtectionFinalizer)
	case *corev1.PersistentVolume:
		o.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}
		addFinalizer(&o.ObjectMeta, PVProtectionFinalizer)
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if len(o.Spec.Finalizers) == 0 {
			o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
		}
	case *storagev1.VolumeAttachment:
		o.Status = storagev1.VolumeAttachmentStatus{}
	}
	setDefaults(obj)
}

func addFinalizer(m *metav1.ObjectMeta, f string) {
	for _, have := range m.Finalizers {
		if have == f {
			return
		}
	}
	m.Finalizers = append(m.Finalizers, f)
}

// validateObjectMeta checks the name as the real server does for these
// kinds: required, and a DNS-1123 subdomain.
func validateObjectMeta(res *resource, m metav1.Object) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("metadata", "name")
	if m.GetName() == "" {
		return append(errs, field.Required(p, "name or generateName is required"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(m.GetName()) {
		errs = append(errs, field.Invalid(p, m.GetName(), msg))
	}
	return errs
}

// validateCreate holds the rules that matter to the volume lifecycle.
func validateCreate(res *resource, obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		spec := field.NewPath("spec")
		if len(o.Spec.AccessModes) == 0 {
			errs = append(errs, field.Required(spec.Child("accessModes"), "at least 1 access mode is required"))
		}
		if _, ok := o.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			errs = append(errs, field.Required(spec.Child("resources").Key(string(corev1.ResourceStorage)), ""))
		}
	case *corev1.PersistentVolume:
		spec := field.NewPath("spec")
		if _, ok := o.Spec.Capacity[corev1.ResourceStorage]; !ok {
			errs = append(errs, field.Required(spec.Child("capacity").Key(string(corev1.ResourceStorage)), ""))
		}
		if len(o.Spec.AccessModes) == 0 {
			errs = append(errs, field.Required(spec.Child("accessModes"), ""))
		}
		if n := countVolumeSources(o.Spec.PersistentVolumeSource); n == 0 {
			errs = append(errs, field.Required(spec, "must specify a volume type"))
		} else if n > 1 {
			errs = append(errs, field.Forbidden(spec, "may not specify more than 1 volume type"))
		}
	case *storagev1.StorageClass:
		if o.Provisioner == "" {
			errs = append(errs, field.Required(field.NewPath("provisioner"), ""))
		}
	case *storagev1.VolumeAttachment:
		spec := field.NewPath("spec")
		if o.Spec.Attacher == "" {
			errs = append(errs, field.Required(spec.Child("attacher"), ""))
		}
		if o.Spec.NodeName == "" {
			errs = append(errs, field.Required(spec.Child("nodeName"), ""))
		}
	case *corev1.Pod:
		if len(o.Spec.Containers) == 0 {
			errs = append(errs, field.Required(field.NewPath("spec", "containers"), ""))
		}
	case *corev1.Namespace:
		// Namespace names are DNS-1123 labels: no dots.
		for _, msg := range validation.IsDNS1123Label(o.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), o.Name, msg))
		}
	}
	errs = append(errs, validateSpec(obj)...)
	return append(errs, validateSnapshotCreate(obj)...)
}

// validateUpdate enforces the immutable fields of the lifecycle objects.
func validateUpdate(res *resource, obj, old runtime.Object) field.ErrorList {
	// The update strategies validate the new object as a create does,
	// then what may not change.
	errs := validateSpec(obj)
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		errs = append(errs, validateClaimUpdate(o, old.(*corev1.PersistentVolumeClaim))...)
	case *corev1.PersistentVolume:
		was := old.(*corev1.PersistentVolume)
		if !apiequality.Semantic.DeepEqual(o.Spec.PersistentVolumeSource, was.Spec.PersistentVolumeSource) {
			// With the diff ValidatePersistentVolumeUpdate appends.
			errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+
				diff.Diff(asInternal(was.Spec.PersistentVolumeSource), asInternal(o.Spec.PersistentVolumeSource))))
		}
		// ValidatePersistentVolumeUpdate names the field without "spec.".
		if !apiequality.Semantic.DeepEqual(o.Spec.VolumeMode, was.Spec.VolumeMode) {
			var mode any
			if o.Spec.VolumeMode != nil {
				mode = string(*o.Spec.VolumeMode)
			}
			errs = append(errs, field.Invalid(field.NewPath("volumeMode"), mode, "field is immutable"))
		}
	case *storagev1.StorageClass:
		// The storage group's declarative validation
		// (kubernetes staging/src/k8s.io/api/storage/v1 +k8s:immutable
		// tags): provisioner, parameters, reclaimPolicy and
		// volumeBindingMode never change; mountOptions,
		// allowedTopologies and allowVolumeExpansion may.
		was := old.(*storagev1.StorageClass)
		if o.Provisioner != was.Provisioner {
			errs = append(errs, immutable(field.NewPath("provisioner")))
		}
		if !apiequality.Semantic.DeepEqual(o.Parameters, was.Parameters) {
			errs = append(errs, immutable(field.NewPath("parameters")))
		}
		if !apiequality.Semantic.DeepEqual(o.ReclaimPolicy, was.ReclaimPolicy) {
			errs = append(errs, immutable(field.NewPath("reclaimPolicy")))
		}
		if !apiequality.Semantic.DeepEqual(o.VolumeBindingMode, was.VolumeBindingMode) {
			errs = append(errs, immutable(field.NewPath("volumeBindingMode")))
		}
	case *storagev1.VolumeAttachment:
		was := old.(*storagev1.VolumeAttachment)
		if !apiequality.Semantic.DeepEqual(o.Spec, was.Spec) {
			errs = append(errs, field.Invalid(field.NewPath("spec"), o.Spec, "field is immutable"))
		}
	case *storagev1.CSIDriver:
		was := old.(*storagev1.CSIDriver)
		// The real path really says "attachedRequired".
		if !apiequality.Semantic.DeepEqual(o.Spec.AttachRequired, was.Spec.AttachRequired) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "attachedRequired"), o.Spec.AttachRequired, "field is immutable"))
		}
		if !apiequality.Semantic.DeepEqual(o.Spec.VolumeLifecycleModes, was.Spec.VolumeLifecycleModes) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "volumeLifecycleModes"), o.Spec.VolumeLifecycleModes, "field is immutable"))
		}
	}
	return append(errs, validateSnapshotUpdate(obj, old)...)
}

// validateStatusUpdate holds the rules of status writes.
func validateStatusUpdate(obj runtime.Object) field.ErrorList {
	if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		return validateClaimStatusUpdate(claim)
	}
	return nil
}

func countVolumeSources(src corev1.PersistentVolumeSource) int {
	n := 0
	for _, set := range []bool{
		src.CSI != nil, src.HostPath != nil, src.Local != nil, src.NFS != nil, src.ISCSI != nil,
		src.FC != nil, src.RBD != nil, src.CephFS != nil, src.Glusterfs != nil,
	} {
		if set {
			n++
		}
	}
	return n
}
