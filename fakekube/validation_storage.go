package fakekube

import (
	"net/http"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The values the real server accepts for the enumerated fields of the
// volume lifecycle, in the order its messages list them
// (kubernetes pkg/apis/core/validation/validation.go:
// supportedAccessModes, supportedVolumeModes, supportedReclaimPolicy;
// pkg/apis/storage/validation/validation.go: supportedReclaimPolicy,
// supportedVolumeBindingModes, supportedFSGroupPolicies,
// supportedVolumeLifecycleModes). The storage group's lists keep their
// declaration order in messages; the core group's are sorted.
var (
	supportedAccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany,
		corev1.ReadWriteOnce, corev1.ReadWriteOncePod}
	supportedVolumeModes       = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
	supportedPVReclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete,
		corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}
	supportedClassReclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete,
		corev1.PersistentVolumeReclaimRetain}
	supportedBindingModes  = []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
	supportedFSGroupPolicy = []storagev1.FSGroupPolicy{storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy,
		storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}
	supportedLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
)

// maxDataBytes is the most a ConfigMap's or a Secret's data may hold
// (kubernetes pkg/apis/core/validation/validation.go, MaxSecretSize and
// the ConfigMap's size check, both 1 MiB).
const maxDataBytes = 1 << 20

// validateSpec holds the field rules the real server checks on every write
// of an object, create and update alike (its Validate<Kind> functions,
// which the update validation runs on the new object too).
func validateSpec(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		spec := field.NewPath("spec")
		errs = append(errs, oneOf(spec.Child("accessModes"), o.Spec.AccessModes, supportedAccessModes)...)
		if q, ok := o.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			errs = append(errs, positive(q, spec.Child("resources").Key(string(corev1.ResourceStorage)))...)
		}
		if o.Spec.VolumeMode != nil {
			errs = append(errs, oneOf(spec.Child("volumeMode"), []corev1.PersistentVolumeMode{*o.Spec.VolumeMode}, supportedVolumeModes)...)
		}
	case *corev1.PersistentVolume:
		spec := field.NewPath("spec")
		errs = append(errs, oneOf(spec.Child("accessModes"), o.Spec.AccessModes, supportedAccessModes)...)
		if q, ok := o.Spec.Capacity[corev1.ResourceStorage]; ok {
			p := spec.Child("capacity").Key(string(corev1.ResourceStorage))
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p, q.Value(), "must be a valid resource quantity"))
			}
			errs = append(errs, positive(q, p)...)
		}
		if o.Spec.PersistentVolumeReclaimPolicy != "" {
			errs = append(errs, oneOf(spec.Child("persistentVolumeReclaimPolicy"),
				[]corev1.PersistentVolumeReclaimPolicy{o.Spec.PersistentVolumeReclaimPolicy}, supportedPVReclaimPolicies)...)
		}
		if o.Spec.VolumeMode != nil {
			errs = append(errs, oneOf(spec.Child("volumeMode"), []corev1.PersistentVolumeMode{*o.Spec.VolumeMode}, supportedVolumeModes)...)
		}
		if csi := o.Spec.CSI; csi != nil {
			p := spec.Child("csi")
			if csi.Driver == "" {
				errs = append(errs, field.Required(p.Child("driver"), ""))
			}
			if csi.VolumeHandle == "" {
				errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
			}
		}
	case *storagev1.StorageClass:
		if o.ReclaimPolicy != nil {
			errs = append(errs, oneOf(field.NewPath("reclaimPolicy"),
				[]corev1.PersistentVolumeReclaimPolicy{*o.ReclaimPolicy}, supportedClassReclaimPolicies)...)
		}
		if o.VolumeBindingMode != nil {
			errs = append(errs, oneOf(field.NewPath("volumeBindingMode"),
				[]storagev1.VolumeBindingMode{*o.VolumeBindingMode}, supportedBindingModes)...)
		}
	case *storagev1.VolumeAttachment:
		// Only attachers other than the in-tree ones are checked this
		// way; csisim knows no in-tree attacher.
		src := o.Spec.Source
		p := field.NewPath("spec", "source")
		const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
		switch {
		case src.PersistentVolumeName == nil && src.InlineVolumeSpec == nil:
			errs = append(errs, field.Required(p, exactlyOne))
		case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
			errs = append(errs, field.Forbidden(p, exactlyOne))
		}
	case *storagev1.CSIDriver:
		spec := field.NewPath("spec")
		if o.Spec.FSGroupPolicy != nil {
			errs = append(errs, oneOf(spec.Child("fsGroupPolicy"), []storagev1.FSGroupPolicy{*o.Spec.FSGroupPolicy}, supportedFSGroupPolicy)...)
		}
		errs = append(errs, oneOf(spec.Child("volumeLifecycleModes"), o.Spec.VolumeLifecycleModes, supportedLifecycleModes)...)
	case *corev1.ConfigMap:
		n := 0
		for _, v := range o.Data {
			n += len(v)
		}
		for _, v := range o.BinaryData {
			n += len(v)
		}
		if n > maxDataBytes {
			// The real server names no field here: its path prints "[]".
			errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataBytes))
		}
	case *corev1.Secret:
		n := 0
		for _, v := range o.Data {
			n += len(v)
		}
		if n > maxDataBytes {
			errs = append(errs, field.TooLong(field.NewPath("data"), "", maxDataBytes))
		}
	}
	return errs
}

// oneOf refuses the values not in supported, with the real server's
// "Unsupported value" error naming the supported ones.
func oneOf[T ~string](p *field.Path, values, supported []T) field.ErrorList {
	var errs field.ErrorList
	for _, v := range values {
		ok := false
		for _, s := range supported {
			ok = ok || v == s
		}
		if !ok {
			errs = append(errs, field.NotSupported(p, v, supported))
		}
	}
	return errs
}

// positive is the real server's check of a requested or offered size.
func positive(q apiresource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than zero")}
	}
	return nil
}

// immutable is the error of the storage group's declarative validation for
// a changed immutable field: it names no value.
func immutable(p *field.Path) *field.Error {
	return field.Invalid(p, nil, "field is immutable")
}

// etcdMaxRequestBytes is etcd's default --max-request-bytes (1.5 MiB),
// the most one write to it may carry; the real server's etcd refuses a
// larger one and the API server passes its words on, 500 without a
// reason.
const etcdMaxRequestBytes = 3 << 19

// etcdRequestOverhead estimates what a write adds to the stored value:
// the storage envelope (the "k8s\x00" prefix and the runtime.Unknown
// around the protobuf) and the transaction around the put.
const etcdRequestOverhead = 128

// checkStorable refuses an object the real server's etcd would refuse as
// too large. It measures the object's protobuf encoding, as the server
// stores built-in kinds; kinds without one (custom resources) are not
// measured. Near the limit the estimate may be off by a few bytes.
func checkStorable(res *resource, obj runtime.Object) error {
	sized, ok := obj.(interface{ Size() int })
	if !ok {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	key := "/registry/" + res.gvr.Resource + "/" + m.GetNamespace() + "/" + m.GetName()
	if sized.Size()+len(key)+etcdRequestOverhead <= etcdMaxRequestBytes {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Message: "etcdserver: request is too large"}}
}
