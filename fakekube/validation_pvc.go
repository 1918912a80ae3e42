package fakekube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// annBetaStorageClass is the claim annotation that named a class before
// spec.storageClassName existed; it still wins over the field.
const annBetaStorageClass = "volume.beta.kubernetes.io/storage-class"

// claimSpecImmutable is the start of the real server's message for a
// forbidden change of a claim's spec; the server adds a diff of the spec (kubernetes pkg/apis/core/validation/validation.go,
// ValidatePersistentVolumeClaimUpdate).
const claimSpecImmutable = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"

// validateClaimUpdate checks a claim's update as the real server does with
// RecoverVolumeExpansionFailure on (GA): the spec is immutable except a
// first volumeName, a first class, and — for a bound claim — the storage
// request and volumeAttributesClassName; the request may go down only
// while it stays above status.capacity (recovery from a failed
// expansion). The status is the stored one (the update strategy keeps it).
func validateClaimUpdate(claim, was *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	a, b := claim.Spec.DeepCopy(), was.Spec.DeepCopy()
	if was.Spec.VolumeName == "" {
		b.VolumeName = a.VolumeName
	}
	// A claim without a class may be given one (the PV controller's
	// retroactive default StorageClass), or the class its beta annotation
	// names.
	if b.StorageClassName == nil && a.StorageClassName != nil {
		if old, ok := was.Annotations[annBetaStorageClass]; !ok || old == *a.StorageClassName {
			b.StorageClassName = a.StorageClassName
		}
	}
	if was.Status.Phase == corev1.ClaimBound && a.Resources.Requests != nil {
		a.Resources.Requests[corev1.ResourceStorage] = was.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	a.VolumeAttributesClassName = b.VolumeAttributesClassName
	if !apiequality.Semantic.DeepEqual(a, b) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), claimSpecImmutable+"\n"+specDiff(b, a)))
	}
	newSize := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	oldSize := was.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := was.Status.Capacity[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(capacity) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"),
			"field can not be less than status.capacity"))
	}
	if !apiequality.Semantic.DeepEqual(claim.Spec.VolumeMode, was.Spec.VolumeMode) {
		var mode any
		if claim.Spec.VolumeMode != nil {
			mode = string(*claim.Spec.VolumeMode)
		}
		errs = append(errs, field.Invalid(field.NewPath("volumeMode"), mode, "field is immutable"))
	}
	return errs
}

// specDiff is the diff the real server appends to its message: a unified
// diff (3 lines of context) of the old and new spec as indented JSON
// (apimachinery pkg/util/diff.Diff) of its internal types, whose fields
// carry no JSON tags, so the JSON names them as Go does and leaves out
// nothing.
func specDiff(old, cur *corev1.PersistentVolumeClaimSpec) string {
	return diff.Diff(asInternal(*old), asInternal(*cur))
}

// claimResizeStatuses are the values allocatedResourceStatuses may hold
// (kubernetes pkg/apis/core/validation/validation.go, resizeStatusSet;
// v1.37 names the field status.allocatedResourceStatuses, as the real
// server answered in fidelity/apisemantics_test.go).
var claimResizeStatuses = sets.New(corev1.PersistentVolumeClaimControllerResizeInProgress,
	corev1.PersistentVolumeClaimControllerResizeInfeasible,
	corev1.PersistentVolumeClaimNodeResizePending,
	corev1.PersistentVolumeClaimNodeResizeInProgress,
	corev1.PersistentVolumeClaimNodeResizeInfeasible)

// validateClaimStatusUpdate checks a claim's status write as the real
// server does (ValidatePersistentVolumeClaimStatusUpdate): quantities not
// negative, allocatedResources and allocatedResourceStatuses keyed by
// storage (or a qualified non-native name), the statuses from the known
// set.
func validateClaimStatusUpdate(claim *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	if len(claim.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for _, r := range sets.List(sets.KeySet(claim.Status.Capacity)) {
		errs = append(errs, nonNegative(claim.Status.Capacity[r], capPath.Key(string(r)))...)
	}
	// The real v1.37.2 server names the field in the plural here.
	statusPath := field.NewPath("status", "allocatedResourceStatuses")
	for _, k := range sets.List(sets.KeySet(claim.Status.AllocatedResourceStatuses)) {
		errs = append(errs, claimResourceKey(string(k), statusPath)...)
		if !claimResizeStatuses.Has(claim.Status.AllocatedResourceStatuses[k]) {
			// The real server names the key, not the value, here.
			errs = append(errs, field.NotSupported(statusPath, k, sets.List(claimResizeStatuses)))
		}
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for _, r := range sets.List(sets.KeySet(claim.Status.AllocatedResources)) {
		if e := claimResourceKey(string(r), allocPath); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		errs = append(errs, nonNegative(claim.Status.AllocatedResources[r], allocPath.Key(string(r)))...)
	}
	return errs
}

// nonNegative is the real server's validateBasicResource.
func nonNegative(q apiresource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be greater than or equal to 0")}
	}
	return nil
}

// claimResourceKey is the real server's
// validatePersistentVolumeClaimResourceKey: a qualified name, and of the
// native (unprefixed or kubernetes.io/) names only storage.
func claimResourceKey(key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(key) {
		errs = append(errs, field.Invalid(p, key, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	native := !strings.Contains(key, "/") || strings.Contains(key, "kubernetes.io/")
	if native && key != string(corev1.ResourceStorage) {
		errs = append(errs, field.NotSupported(p, key, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	return errs
}
