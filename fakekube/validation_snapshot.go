package fakekube

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)

// validateSnapshotCreate holds the rules of the snapshot CRDs' schemas
// (required fields, enums and their x-kubernetes-validations), with the
// messages the real server gives for them.
func validateSnapshotCreate(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch o := obj.(type) {
	case *snapshotv1.VolumeSnapshot:
		src := o.Spec.Source
		if (src.PersistentVolumeClaimName == nil) == (src.VolumeSnapshotContentName == nil) {
			errs = append(errs, field.Invalid(spec.Child("source"), "object",
				"exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set"))
		}
		if c := o.Spec.VolumeSnapshotClassName; c != nil && *c == "" {
			errs = append(errs, field.Invalid(spec.Child("volumeSnapshotClassName"), "string",
				"volumeSnapshotClassName must not be the empty string when set"))
		}
	case *snapshotv1.VolumeSnapshotContent:
		if o.Spec.Driver == "" {
			errs = append(errs, field.Required(spec.Child("driver"), ""))
		}
		errs = append(errs, deletionPolicy(spec.Child("deletionPolicy"), o.Spec.DeletionPolicy)...)
		if (o.Spec.Source.VolumeHandle == nil) == (o.Spec.Source.SnapshotHandle == nil) {
			errs = append(errs, field.Invalid(spec.Child("source"), "object",
				"exactly one of volumeHandle and snapshotHandle must be set"))
		}
		if o.Spec.VolumeSnapshotRef.Name == "" || o.Spec.VolumeSnapshotRef.Namespace == "" {
			errs = append(errs, field.Invalid(spec.Child("volumeSnapshotRef"), "object",
				"both spec.volumeSnapshotRef.name and spec.volumeSnapshotRef.namespace must be set"))
		}
	case *snapshotv1.VolumeSnapshotClass:
		if o.Driver == "" {
			errs = append(errs, field.Required(field.NewPath("driver"), ""))
		}
		errs = append(errs, deletionPolicy(field.NewPath("deletionPolicy"), o.DeletionPolicy)...)
	}
	return errs
}

func deletionPolicy(p *field.Path, v snapshotv1.DeletionPolicy) field.ErrorList {
	switch v {
	case "":
		return field.ErrorList{field.Required(p, "")}
	case snapshotv1.VolumeSnapshotContentDelete, snapshotv1.VolumeSnapshotContentRetain:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, []string{"Delete", "Retain"})}
}

// validateSnapshotUpdate enforces the CRDs' immutability rules.
func validateSnapshotUpdate(obj, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	src := field.NewPath("spec", "source")
	switch o := obj.(type) {
	case *snapshotv1.VolumeSnapshot:
		was := old.(*snapshotv1.VolumeSnapshot).Spec.Source
		if !equalPtr(o.Spec.Source.PersistentVolumeClaimName, was.PersistentVolumeClaimName) {
			errs = append(errs, field.Invalid(src.Child("persistentVolumeClaimName"), "string", "persistentVolumeClaimName is immutable"))
		}
		if !equalPtr(o.Spec.Source.VolumeSnapshotContentName, was.VolumeSnapshotContentName) {
			errs = append(errs, field.Invalid(src.Child("volumeSnapshotContentName"), "string", "volumeSnapshotContentName is immutable"))
		}
	case *snapshotv1.VolumeSnapshotContent:
		was := old.(*snapshotv1.VolumeSnapshotContent).Spec.Source
		if !equalPtr(o.Spec.Source.VolumeHandle, was.VolumeHandle) {
			errs = append(errs, field.Invalid(src.Child("volumeHandle"), "string", "volumeHandle is immutable"))
		}
		if !equalPtr(o.Spec.Source.SnapshotHandle, was.SnapshotHandle) {
			errs = append(errs, field.Invalid(src.Child("snapshotHandle"), "string", "snapshotHandle is immutable"))
		}
	}
	return errs
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
