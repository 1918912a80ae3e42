package fakekube

// Printers of volumes, claims and the storage group's kinds.

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storagePrinters prints volumes, claims and the storage group's kinds.
func storagePrinters() map[schema.GroupKind]kindPrinter {
	name, age, col := nameColumn, ageColumn, column
	pvDoc, pvStatusDoc := corev1.PersistentVolumeSpec{}.SwaggerDoc(), corev1.PersistentVolumeStatus{}.SwaggerDoc()
	pvcDoc, pvcStatusDoc := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc(), corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	scDoc := storagev1.StorageClass{}.SwaggerDoc()
	csiDriverDoc := storagev1.CSIDriverSpec{}.SwaggerDoc()
	vaDoc := storagev1.VolumeAttachmentSpec{}.SwaggerDoc()
	capDoc := storagev1.CSIStorageCapacity{}.SwaggerDoc()
	return map[schema.GroupKind]kindPrinter{
		{Kind: "PersistentVolume"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Capacity", "string", pvDoc["capacity"]),
			col("Access Modes", "string", pvDoc["accessModes"]),
			col("Reclaim Policy", "string", pvDoc["persistentVolumeReclaimPolicy"]),
			col("Status", "string", pvStatusDoc["phase"]),
			col("Claim", "string", pvDoc["claimRef"]),
			col("StorageClass", "string", "StorageClass of the pv"),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
			col("Reason", "string", pvStatusDoc["reason"]),
			age,
			wide(col("VolumeMode", "string", pvDoc["volumeMode"])),
		}, printPersistentVolume),
		{Kind: "PersistentVolumeClaim"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Status", "string", pvcStatusDoc["phase"]),
			col("Volume", "string", pvcDoc["volumeName"]),
			col("Capacity", "string", pvcStatusDoc["capacity"]),
			col("Access Modes", "string", pvcStatusDoc["accessModes"]),
			col("StorageClass", "string", "StorageClass of the pvc"),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
			age,
			wide(col("VolumeMode", "string", pvcDoc["volumeMode"])),
		}, printPersistentVolumeClaim),
		storageClassKind: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Provisioner", "string", scDoc["provisioner"]),
			col("ReclaimPolicy", "string", scDoc["reclaimPolicy"]),
			col("VolumeBindingMode", "string", scDoc["volumeBindingMode"]),
			col("AllowVolumeExpansion", "string", scDoc["allowVolumeExpansion"]),
			age,
		}, printStorageClass),
		{Group: storagev1.GroupName, Kind: "VolumeAttachment"}: printerFor([]metav1.TableColumnDefinition{
			name,
			// The real printer marks this column as a name too.
			{Name: "Attacher", Type: "string", Format: "name", Description: vaDoc["attacher"]},
			col("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
			col("Node", "string", vaDoc["nodeName"]),
			col("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
			age,
		}, func(pc *printContext, va *storagev1.VolumeAttachment) metav1.TableRow {
			return cells(va.Name, va.Spec.Attacher, derefOr(va.Spec.Source.PersistentVolumeName, ""), va.Spec.NodeName,
				va.Status.Attached, pc.age(va.CreationTimestamp))
		}),
		{Group: storagev1.GroupName, Kind: "CSINode"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"), age,
		}, func(pc *printContext, n *storagev1.CSINode) metav1.TableRow {
			return cells(n.Name, int64(len(n.Spec.Drivers)), pc.age(n.CreationTimestamp))
		}),
		{Group: storagev1.GroupName, Kind: "CSIDriver"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("AttachRequired", "boolean", csiDriverDoc["attachRequired"]),
			col("PodInfoOnMount", "boolean", csiDriverDoc["podInfoOnMount"]),
			col("StorageCapacity", "boolean", csiDriverDoc["storageCapacity"]),
			col("TokenRequests", "string", csiDriverDoc["tokenRequests"]),
			col("RequiresRepublish", "boolean", csiDriverDoc["requiresRepublish"]),
			col("Modes", "string", csiDriverDoc["volumeLifecycleModes"]),
			age,
		}, printCSIDriver),
		// kubernetes pkg/printers/internalversion/printers.go
		// volumeAttributesClassColumnDefinitions.
		{Group: storagev1.GroupName, Kind: "VolumeAttributesClass"}: printerFor([]metav1.TableColumnDefinition{
			name, col("DriverName", "string", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]), age,
		}, func(pc *printContext, c *storagev1.VolumeAttributesClass) metav1.TableRow {
			return cells(c.Name, c.DriverName, pc.age(c.CreationTimestamp))
		}),
		{Group: storagev1.GroupName, Kind: "CSIStorageCapacity"}: printerFor([]metav1.TableColumnDefinition{
			name, col("StorageClassName", "string", capDoc["storageClassName"]), col("Capacity", "string", capDoc["capacity"]),
		}, func(pc *printContext, c *storagev1.CSIStorageCapacity) metav1.TableRow {
			capacity := "<unset>"
			if c.Capacity != nil {
				capacity = c.Capacity.String()
			}
			return cells(c.Name, c.StorageClassName, capacity)
		}),
	}
}

// accessModesString lists access modes in the fixed order RWO, ROX, RWX,
// RWOP, whatever order and repetitions they were written in.
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"},
	} {
		if slices.Contains(modes, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func printPersistentVolume(pc *printContext, pv *corev1.PersistentVolume) metav1.TableRow {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	class := pv.Spec.StorageClassName
	if c, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		class = c
	}
	return cells(pv.Name, capacity.String(), accessModesString(pv.Spec.AccessModes),
		string(pv.Spec.PersistentVolumeReclaimPolicy), phase, claim, class,
		derefOr(pv.Spec.VolumeAttributesClassName, "<unset>"), pv.Status.Reason, pc.age(pv.CreationTimestamp),
		volumeModeString(pv.Spec.VolumeMode))
}

func volumeModeString(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// printPersistentVolumeClaim: CAPACITY and ACCESS MODES are the bound
// volume's, from the status, and stay empty until the claim names a volume.
func printPersistentVolumeClaim(pc *printContext, pvc *corev1.PersistentVolumeClaim) metav1.TableRow {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = q.String(), accessModesString(pvc.Status.AccessModes)
	}
	class := derefOr(pvc.Spec.StorageClassName, "")
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		class = c
	}
	return cells(pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class,
		derefOr(pvc.Spec.VolumeAttributesClassName, "<unset>"), pc.age(pvc.CreationTimestamp),
		volumeModeString(pvc.Spec.VolumeMode))
}

// isDefaultClass reports whether a StorageClass carries the
// is-default-class annotation (GA or beta) set to "true".
func isDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[isDefaultClassAnnotation] == "true" || sc.Annotations[betaIsDefaultClassAnnotation] == "true"
}

// effectiveDefaultClass is the StorageClass the real server prints as
// "(default)": of those annotated default, the newest, and of equally new
// ones the first by name — the one the DefaultStorageClass admission plugin
// picks. "" when none is annotated.
func effectiveDefaultClass(classes []*storagev1.StorageClass) string {
	var best *storagev1.StorageClass
	for _, sc := range classes {
		if !isDefaultClass(sc) {
			continue
		}
		if best == nil {
			best = sc
			continue
		}
		a, b := sc.CreationTimestamp.UnixNano(), best.CreationTimestamp.UnixNano()
		if a > b || (a == b && sc.Name < best.Name) {
			best = sc
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

func printStorageClass(pc *printContext, sc *storagev1.StorageClass) metav1.TableRow {
	name := sc.Name
	if name == pc.defaultClass {
		name += " (default)"
	}
	reclaim := derefOr(sc.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete)
	binding := derefOr(sc.VolumeBindingMode, storagev1.VolumeBindingImmediate)
	return cells(name, sc.Provisioner, string(reclaim), string(binding), derefOr(sc.AllowVolumeExpansion, false),
		pc.age(sc.CreationTimestamp))
}

func printCSIDriver(pc *printContext, d *storagev1.CSIDriver) metav1.TableRow {
	var modes []string
	for _, m := range d.Spec.VolumeLifecycleModes {
		modes = append(modes, string(m))
	}
	tokens := "<unset>"
	if d.Spec.TokenRequests != nil {
		var audiences []string
		for _, t := range d.Spec.TokenRequests {
			audiences = append(audiences, t.Audience)
		}
		tokens = strings.Join(audiences, ",")
	}
	return cells(d.Name, derefOr(d.Spec.AttachRequired, true), derefOr(d.Spec.PodInfoOnMount, false),
		derefOr(d.Spec.StorageCapacity, false), tokens, derefOr(d.Spec.RequiresRepublish, false),
		orNone(strings.Join(modes, ",")), pc.age(d.CreationTimestamp))
}
