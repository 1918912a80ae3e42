package volumeutil

import (
	"regexp"
	"strings"
)

// Wire names of storage objects that several components read or write and
// that no importable upstream package exports. Names the upstream modules
// do export are used from there: k8s.io/component-helpers/storage/volume
// (the selected-node, provisioner and binding annotations, the
// external-provisioner finalizer) and k8s.io/api/core/v1 (the beta
// storage-class annotation, the node taints).
const (
	// PVCProtectionFinalizer holds a claim while a pod uses it; the API
	// server's StorageObjectInUseProtection admission adds it, the
	// pvc-protection controller removes it (kubernetes
	// pkg/volume/util/finalizer.go).
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	// PVProtectionFinalizer holds a PersistentVolume while a claim is
	// bound to it; removed by the pv-protection controller (kubernetes
	// pkg/volume/util/finalizer.go).
	PVProtectionFinalizer = "kubernetes.io/pv-protection"
	// AnnDefaultStorageClass marks the StorageClass claims without one
	// get (kubernetes pkg/apis/storage/util/helpers.go,
	// IsDefaultStorageClassAnnotation).
	AnnDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
	// AnnNodeExpansionNotRequired on a claim tells the kubelet that the
	// controller finished the expansion and the node has nothing to do
	// (kubernetes pkg/volume/util/types/types.go, NodeExpansionNotRequired;
	// written by the external-resizer, pkg/util/util.go).
	AnnNodeExpansionNotRequired = "volume.kubernetes.io/node-expansion-not-required"
	// AnnPreResizeCapacity records on the PV its capacity before an
	// expansion the node still has to finish (external-resizer
	// pkg/util/util.go; feature AnnotateFsResize, beta, on). The
	// expand controller leaves claims alone while it is set.
	AnnPreResizeCapacity = "volume.alpha.kubernetes.io/pre-resize-capacity"
	// AnnResizer names, on a claim whose volume is of a migrated in-tree
	// plugin, the CSI driver whose external-resizer expands it: the expand
	// controller writes it (volumetypes.VolumeResizerKey).
	AnnResizer = "volume.kubernetes.io/storage-resizer"
	// AnnModifySecretName and AnnModifySecretNamespace name on the PV the
	// secret of ControllerModifyVolume, which the external-provisioner
	// writes when the class names one (its controller-modify secret, or
	// the default secret) and the external-resizer reads, else taking the
	// PV's controller-expand secret (external-provisioner
	// pkg/controller/controller.go, external-resizer
	// pkg/modifier/csi_modifier.go).
	AnnModifySecretName      = "volume.kubernetes.io/controller-modify-secret-name"
	AnnModifySecretNamespace = "volume.kubernetes.io/controller-modify-secret-namespace"
)

// AttacherFinalizerPrefix begins the external-attacher's finalizer
// (external-attacher pkg/controller/util.go, GetFinalizerName).
const AttacherFinalizerPrefix = "external-attacher/"

// AttacherFinalizer is the finalizer the external-attacher of a driver
// puts on VolumeAttachments and PersistentVolumes: the prefix and the
// driver name with every character outside [a-zA-Z0-9-] replaced by "-",
// and an "X" appended if that leaves a trailing "-" (external-attacher
// pkg/controller/util.go, GetFinalizerName).
func AttacherFinalizer(driver string) string {
	name := unsafeChars.ReplaceAllString(driver, "-")
	if strings.HasSuffix(name, "-") {
		name += "X"
	}
	return AttacherFinalizerPrefix + name
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9-]`)
