package fakekube

// Printers of kinds that are CustomResourceDefinitions on a real cluster: the
// snapshot kinds.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// snapshotPrinters prints the snapshot and group snapshot kinds, which are
// CustomResourceDefinitions on a real cluster: from the
// additionalPrinterColumns of kubernetes-csi/external-snapshotter's CRDs
// (client/config/crd).
func snapshotPrinters() map[schema.GroupKind]kindPrinter {
	name := nameColumn
	return map[schema.GroupKind]kindPrinter{
		{Group: snapshotGroup, Kind: "VolumeSnapshot"}: crdPrinter(name,
			crdColumn{"ReadyToUse", "boolean", "Indicates if the snapshot is ready to be used to restore a volume.", ".status.readyToUse"},
			crdColumn{"SourcePVC", "string", "If a new snapshot needs to be created, this contains the name of the source PVC from which this snapshot was (or will be) created.", ".spec.source.persistentVolumeClaimName"},
			crdColumn{"SourceSnapshotContent", "string", "If a snapshot already exists, this contains the name of the existing VolumeSnapshotContent object representing the existing snapshot.", ".spec.source.volumeSnapshotContentName"},
			crdColumn{"RestoreSize", "string", "Represents the minimum size of volume required to rehydrate from this snapshot.", ".status.restoreSize"},
			crdColumn{"SnapshotClass", "string", "The name of the VolumeSnapshotClass requested by the VolumeSnapshot.", ".spec.volumeSnapshotClassName"},
			crdColumn{"SnapshotContent", "string", "Name of the VolumeSnapshotContent object to which the VolumeSnapshot object intends to bind to. Please note that verification of binding actually requires checking both VolumeSnapshot and VolumeSnapshotContent to ensure both are pointing at each other. Binding MUST be verified prior to usage of this object.", ".status.boundVolumeSnapshotContentName"},
			crdColumn{"CreationTime", "date", "Timestamp when the point-in-time snapshot was taken by the underlying storage system.", ".status.creationTime"},
			crdColumn{"Age", "date", "", ".metadata.creationTimestamp"}),
		{Group: snapshotGroup, Kind: "VolumeSnapshotContent"}: crdPrinter(name,
			crdColumn{"ReadyToUse", "boolean", "Indicates if the snapshot is ready to be used to restore a volume.", ".status.readyToUse"},
			crdColumn{"RestoreSize", "integer", "Represents the complete size of the snapshot in bytes", ".status.restoreSize"},
			crdColumn{"DeletionPolicy", "string", "Determines whether this VolumeSnapshotContent and its physical snapshot on the underlying storage system should be deleted when its bound VolumeSnapshot is deleted.", ".spec.deletionPolicy"},
			crdColumn{"Driver", "string", "Name of the CSI driver used to create the physical snapshot on the underlying storage system.", ".spec.driver"},
			crdColumn{"VolumeSnapshotClass", "string", "Name of the VolumeSnapshotClass to which this snapshot belongs.", ".spec.volumeSnapshotClassName"},
			crdColumn{"VolumeSnapshot", "string", "Name of the VolumeSnapshot object to which this VolumeSnapshotContent object is bound.", ".spec.volumeSnapshotRef.name"},
			crdColumn{"VolumeSnapshotNamespace", "string", "Namespace of the VolumeSnapshot object to which this VolumeSnapshotContent object is bound.", ".spec.volumeSnapshotRef.namespace"},
			crdColumn{"Age", "date", "", ".metadata.creationTimestamp"}),
		{Group: snapshotGroup, Kind: "VolumeSnapshotClass"}: crdPrinter(name,
			crdColumn{"Driver", "string", "", ".driver"},
			crdColumn{"DeletionPolicy", "string", "Determines whether a VolumeSnapshotContent created through the VolumeSnapshotClass should be deleted when its bound VolumeSnapshot is deleted.", ".deletionPolicy"},
			crdColumn{"Age", "date", "", ".metadata.creationTimestamp"}),
		{Group: groupSnapshotGroup, Kind: "VolumeGroupSnapshot"}: crdPrinter(name,
			crdColumn{"ReadyToUse", "boolean", "Indicates if all the individual snapshots in the group are ready to be used to restore a group of volumes.", ".status.readyToUse"},
			crdColumn{"VolumeGroupSnapshotClass", "string", "The name of the VolumeGroupSnapshotClass requested by the VolumeGroupSnapshot.", ".spec.volumeGroupSnapshotClassName"},
			crdColumn{"VolumeGroupSnapshotContent", "string", "Name of the VolumeGroupSnapshotContent object to which the VolumeGroupSnapshot object intends to bind to. Please note that verification of binding actually requires checking both VolumeGroupSnapshot and VolumeGroupSnapshotContent to ensure both are pointing at each other. Binding MUST be verified prior to usage of this object.", ".status.boundVolumeGroupSnapshotContentName"},
			crdColumn{"CreationTime", "date", "Timestamp when the point-in-time group snapshot was taken by the underlying storage system.", ".status.creationTime"},
			crdColumn{"Age", "date", "", ".metadata.creationTimestamp"}),
		{Group: groupSnapshotGroup, Kind: "VolumeGroupSnapshotContent"}: crdPrinter(name,
			crdColumn{"ReadyToUse", "boolean", "Indicates if all the individual snapshots in the group are ready to be used to restore a group of volumes.", ".status.readyToUse"},
			crdColumn{"DeletionPolicy", "string", "Determines whether this VolumeGroupSnapshotContent and its physical group snapshot on the underlying storage system should be deleted when its bound VolumeGroupSnapshot is deleted.", ".spec.deletionPolicy"},
			crdColumn{"Driver", "string", "Name of the CSI driver used to create the physical group snapshot on the underlying storage system.", ".spec.driver"},
			crdColumn{"VolumeGroupSnapshotClass", "string", "Name of the VolumeGroupSnapshotClass from which this group snapshot was (or will be) created.", ".spec.volumeGroupSnapshotClassName"},
			crdColumn{"VolumeGroupSnapshotNamespace", "string", "Namespace of the VolumeGroupSnapshot object to which this VolumeGroupSnapshotContent object is bound.", ".spec.volumeGroupSnapshotRef.namespace"},
			crdColumn{"VolumeGroupSnapshot", "string", "Name of the VolumeGroupSnapshot object to which this VolumeGroupSnapshotContent object is bound.", ".spec.volumeGroupSnapshotRef.name"},
			crdColumn{"Age", "date", "", ".metadata.creationTimestamp"}),
		{Group: groupSnapshotGroup, Kind: "VolumeGroupSnapshotClass"}: crdPrinter(name,
			crdColumn{"Driver", "string", "", ".driver"},
			crdColumn{"DeletionPolicy", "string", "Determines whether a VolumeGroupSnapshotContent created through the VolumeGroupSnapshotClass should be deleted when its bound VolumeGroupSnapshot is deleted.", ".deletionPolicy"},
			crdColumn{"Age", "date", "", ".metadata.creationTimestamp"}),
	}
}

const (
	snapshotGroup      = "snapshot.storage.k8s.io"
	groupSnapshotGroup = "groupsnapshot.storage.k8s.io"
)

// crdColumn is one additionalPrinterColumn of a CustomResourceDefinition.
type crdColumn struct {
	name, typ, description string
	// jsonPath is a simple JSONPath: field names, dot-separated.
	jsonPath string
}

// crdPrinter prints a kind the way the real server's table convertor for
// CustomResourceDefinitions does: the name, then each printer column's
// field, typed by the column (dates as ages); a cell is null (kubectl
// shows it empty) where the field is absent.
func crdPrinter(name metav1.TableColumnDefinition, columns ...crdColumn) kindPrinter {
	defs := []metav1.TableColumnDefinition{name}
	for _, c := range columns {
		defs = append(defs, metav1.TableColumnDefinition{Name: c.name, Type: c.typ, Description: c.description})
	}
	return kindPrinter{columns: defs, row: func(pc *printContext, obj runtime.Object) metav1.TableRow {
		row := make([]any, 1+len(columns))
		m, err := meta.Accessor(obj)
		if err != nil {
			return metav1.TableRow{Cells: row}
		}
		row[0] = m.GetName()
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return metav1.TableRow{Cells: row}
		}
		for i, c := range columns {
			v, found, err := unstructured.NestedFieldNoCopy(content, strings.Split(strings.TrimPrefix(c.jsonPath, "."), ".")...)
			if found && err == nil {
				row[i+1] = crdCell(pc, c.typ, v)
			}
		}
		return metav1.TableRow{Cells: row}
	}}
}

// crdCell is a field's value as a cell of the column's type, or nil.
func crdCell(pc *printContext, typ string, v any) any {
	switch typ {
	case "string":
		if s, ok := v.(string); ok {
			return s
		}
		if v != nil {
			return fmt.Sprint(v)
		}
	case "integer":
		switch n := v.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		}
	case "number":
		switch n := v.(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "date":
		if s, ok := v.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return pc.age(t)
		}
	}
	return nil
}
