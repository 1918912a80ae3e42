package fakekube

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The printers here give `kubectl get` the columns the real API server's
// printers (kubernetes pkg/printers/internalversion) give: the same names,
// types, formats and priorities, and cells computed by the same rules. The
// server always prints the wide set; kubectl drops priority-1 columns unless
// asked for -o wide.

// kindPrinter prints one kind.
type kindPrinter struct {
	columns []metav1.TableColumnDefinition
	// row computes the cells (and, for pods, the row conditions) of one object.
	row func(pc *printContext, obj runtime.Object) metav1.TableRow
}

// printContext is what cells depend on beyond the object itself.
type printContext struct {
	// now is the server's clock when the table is made: ages count to it.
	now time.Time
	// defaultClass names the StorageClass that is printed "(default)".
	defaultClass string
}

// age is the real printers' translateTimestampSince: a human duration up to
// now, "<unknown>" for an unset time.
func (pc *printContext) age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(pc.now.Sub(t.Time))
}

func (pc *printContext) microAge(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(pc.now.Sub(t.Time))
}

// printerFor adapts a typed row function to kindPrinter.
func printerFor[T runtime.Object](columns []metav1.TableColumnDefinition, row func(pc *printContext, obj T) metav1.TableRow) kindPrinter {
	return kindPrinter{columns: columns, row: func(pc *printContext, obj runtime.Object) metav1.TableRow {
		return row(pc, obj.(T))
	}}
}

func cells(c ...any) metav1.TableRow { return metav1.TableRow{Cells: c} }

// Well-known names the printers read.
const (
	nodeRoleLabelPrefix          = "node-role.kubernetes.io/"
	nodeRoleLabel                = "kubernetes.io/role"
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	nodeUnreachablePodReason     = "NodeLost"
	podInitializingReason        = "PodInitializing"
)

var (
	storageClassKind = schema.GroupKind{Group: storagev1.GroupName, Kind: "StorageClass"}
	// kindPrinters holds the printer of every kind that has one; it is built
	// once and only read. Kinds without one get defaultPrinter.
	kindPrinters = newKindPrinters()
)

// newKindPrinters gathers the printers of every API group's kinds.
func newKindPrinters() map[schema.GroupKind]kindPrinter {
	printers := map[schema.GroupKind]kindPrinter{}
	for _, group := range []map[schema.GroupKind]kindPrinter{
		corePrinters(), appsPrinters(), storagePrinters(), snapshotPrinters(),
	} {
		maps.Copy(printers, group)
	}
	return printers
}

// The columns every printer starts or ends with, and how the others are
// made: kubernetes pkg/printers/internalversion/printers.go takes their
// descriptions from the API types' field docs.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

func column(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

// wide marks a column that kubectl shows only with -o wide.
func wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition { c.Priority = 1; return c }

// corePrinters prints the core group's kinds, events of both groups, and
// leases.
func corePrinters() map[schema.GroupKind]kindPrinter {
	name, age, col := nameColumn, ageColumn, column
	podDoc, podStatusDoc := corev1.PodSpec{}.SwaggerDoc(), corev1.PodStatus{}.SwaggerDoc()
	nodeInfoDoc := corev1.NodeSystemInfo{}.SwaggerDoc()
	nodeAddrDoc := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	eventDoc := corev1.Event{}.SwaggerDoc()

	eventPrinter := printerFor([]metav1.TableColumnDefinition{
		col("Last Seen", "string", eventDoc["lastTimestamp"]),
		col("Type", "string", eventDoc["type"]),
		col("Reason", "string", eventDoc["reason"]),
		col("Object", "string", eventDoc["involvedObject"]),
		wide(col("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		wide(col("Source", "string", eventDoc["source"])),
		col("Message", "string", eventDoc["message"]),
		wide(col("First Seen", "string", eventDoc["firstTimestamp"])),
		wide(col("Count", "string", eventDoc["count"])),
		wide(name),
	}, printEvent)

	return map[schema.GroupKind]kindPrinter{
		{Kind: "Pod"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
			col("Status", "string", "The aggregate status of the containers in this pod."),
			col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			age,
			wide(col("IP", "string", podStatusDoc["podIP"])),
			wide(col("Node", "string", podDoc["nodeName"])),
			wide(col("Nominated Node", "string", podStatusDoc["nominatedNodeName"])),
			wide(col("Readiness Gates", "string", podDoc["readinessGates"])),
		}, printPod),
		{Kind: "Node"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Status", "string", "The status of the node"),
			col("Roles", "string", "The roles of the node"),
			age,
			col("Version", "string", nodeInfoDoc["kubeletVersion"]),
			wide(col("Internal-IP", "string", nodeAddrDoc)),
			wide(col("External-IP", "string", nodeAddrDoc)),
			wide(col("OS-Image", "string", nodeInfoDoc["osImage"])),
			wide(col("Kernel-Version", "string", nodeInfoDoc["kernelVersion"])),
			wide(col("Container-Runtime", "string", nodeInfoDoc["containerRuntimeVersion"])),
		}, printNode),
		{Kind: "Event"}: eventPrinter,
		// The real server stores events.k8s.io events as core events and
		// prints them with the same printer.
		{Group: eventsv1.GroupName, Kind: "Event"}: {columns: eventPrinter.columns,
			row: func(pc *printContext, obj runtime.Object) metav1.TableRow {
				return printEvent(pc, coreEventOf(obj.(*eventsv1.Event)))
			}},
		{Kind: "Namespace"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Status", "string", "The status of the namespace"), age,
		}, func(pc *printContext, ns *corev1.Namespace) metav1.TableRow {
			return cells(ns.Name, string(ns.Status.Phase), pc.age(ns.CreationTimestamp))
		}),
		{Kind: "Secret"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]), col("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]), age,
		}, printSecret),
		{Kind: "ServiceAccount"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), age,
		}, func(pc *printContext, sa *corev1.ServiceAccount) metav1.TableRow {
			return cells(sa.Name, int64(len(sa.Secrets)), pc.age(sa.CreationTimestamp))
		}),
		{Kind: "ConfigMap"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]), age,
		}, func(pc *printContext, cm *corev1.ConfigMap) metav1.TableRow {
			return cells(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), pc.age(cm.CreationTimestamp))
		}),
		{Group: coordinationv1.GroupName, Kind: "Lease"}: printerFor([]metav1.TableColumnDefinition{
			name, col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), age,
		}, func(pc *printContext, l *coordinationv1.Lease) metav1.TableRow {
			return cells(l.Name, derefOr(l.Spec.HolderIdentity, ""), pc.age(l.CreationTimestamp))
		}),
	}
}

// appsPrinters prints the apps group's kinds.
func appsPrinters() map[schema.GroupKind]kindPrinter {
	name, age, col := nameColumn, ageColumn, column
	return map[schema.GroupKind]kindPrinter{
		{Group: appsv1.GroupName, Kind: "StatefulSet"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Ready", "string", "Number of the pod with ready state"),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
		}, printStatefulSet),
		// kubernetes pkg/printers/internalversion/printers.go: deployment-,
		// replicaSet- and controllerRevisionColumnDefinitions.
		{Group: appsv1.GroupName, Kind: "Deployment"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Ready", "string", "Number of the pod with ready state"),
			col("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
			col("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
			wide(col("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])),
		}, printDeployment),
		{Group: appsv1.GroupName, Kind: "ReplicaSet"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
			col("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
			col("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
			age,
			wide(col("Containers", "string", "Names of each container in the template.")),
			wide(col("Images", "string", "Images referenced by each container in the template.")),
			wide(col("Selector", "string", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])),
		}, printReplicaSet),
		{Group: appsv1.GroupName, Kind: "ControllerRevision"}: printerFor([]metav1.TableColumnDefinition{
			name,
			col("Controller", "string", "Controller of the object"),
			col("Revision", "integer", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
			age,
		}, printControllerRevision),
	}
}

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

// snapshotPrinters prints the snapshot kinds, which are
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
	}
}

const snapshotGroup = "snapshot.storage.k8s.io"

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

// defaultPrinter is the real server's default table convertor, for kinds
// without a printer of their own: the name and the creation time as an
// RFC 3339 date, which kubectl shows as an age.
var defaultPrinter = kindPrinter{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	row: func(_ *printContext, obj runtime.Object) metav1.TableRow {
		m, err := meta.Accessor(obj)
		if err != nil {
			return cells("", "")
		}
		return cells(m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339))
	},
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

var (
	podSucceededConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
		Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
		Reason: string(corev1.PodFailed), Message: "The pod failed."}}
)

// printPod computes READY, STATUS and RESTARTS the way the real printer
// does: STATUS starts from the phase (or status.reason), is replaced by the
// state of the first init container that has not finished, else by the
// waiting or terminated reason of the containers (the first container wins,
// as they are walked from the last), and becomes Terminating once the pod
// has a deletionTimestamp and has not finished.
func printPod(pc *printContext, pod *corev1.Pod) metav1.TableRow {
	row := metav1.TableRow{}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = podSucceededConditions
	case corev1.PodFailed:
		row.Conditions = podFailedConditions
	}
	sidecars, total := podSidecars(pod)
	t := podTally{reason: podPhaseReason(pod), sidecars: sidecars}
	if initializing := t.countInitContainers(pod); !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		t.countContainers(pod)
	}
	reason := podTerminatingReason(pod, t.reason)

	restartsCell := strconv.Itoa(t.restarts)
	if t.restarts != 0 && !t.lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", t.restarts, pc.age(metav1.NewTime(t.lastRestart)))
	}
	row.Cells = []any{pod.Name, fmt.Sprintf("%d/%d", t.ready, total), reason, restartsCell, pc.age(pod.CreationTimestamp),
		orNone(podIP(pod)), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), podReadinessGates(pod)}
	return row
}

// podPhaseReason is where STATUS starts: the phase, or status.reason, or
// SchedulingGated.
func podPhaseReason(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	return reason
}

// podSidecars names the init containers that restart always (sidecars),
// and counts the containers READY counts: the containers and the sidecars.
func podSidecars(pod *corev1.Pod) (map[string]bool, int) {
	total := len(pod.Spec.Containers)
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}
	return sidecars, total
}

// podTally is what the walk over a pod's container statuses adds up.
type podTally struct {
	reason   string
	sidecars map[string]bool

	ready, restarts, sidecarRestarts int
	lastRestart, lastSidecarRestart  time.Time
}

// laterRestart is cur, or the time cs last terminated if that is later.
func laterRestart(cur time.Time, cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil && cur.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return cur
}

// countInitContainers walks the init containers up to the first that has
// not finished (a started sidecar has), taking STATUS from it; it reports
// whether there was one.
func (t *podTally) countInitContainers(pod *corev1.Pod) bool {
	for i, cs := range pod.Status.InitContainerStatuses {
		t.restarts += int(cs.RestartCount)
		t.lastRestart = laterRestart(t.lastRestart, cs)
		if t.sidecars[cs.Name] {
			t.sidecarRestarts += int(cs.RestartCount)
			t.lastSidecarRestart = laterRestart(t.lastSidecarRestart, cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case t.sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				t.ready++
			}
			continue
		case cs.State.Terminated != nil:
			t.reason = "Init:" + terminatedReason(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != podInitializingReason:
			t.reason = "Init:" + cs.State.Waiting.Reason
		default:
			t.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return true
	}
	return false
}

// countContainers walks the containers from the last, so that the first
// one's waiting or terminated reason is STATUS; restarts count the
// sidecars' and the containers'.
func (t *podTally) countContainers(pod *corev1.Pod) {
	t.restarts, t.lastRestart = t.sidecarRestarts, t.lastSidecarRestart
	running := false
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := pod.Status.ContainerStatuses[i]
		t.restarts += int(cs.RestartCount)
		t.lastRestart = laterRestart(t.lastRestart, cs)
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			t.reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			t.reason = terminatedReason(cs.State.Terminated)
		case cs.Ready && cs.State.Running != nil:
			running = true
			t.ready++
		}
	}
	// A pod whose containers partly completed while others still run
	// is not Completed.
	if t.reason == "Completed" && running {
		t.reason = "NotReady"
		if podConditionTrue(pod, corev1.PodReady) {
			t.reason = "Running"
		}
	}
}

// podTerminatingReason is STATUS for a pod being deleted: Unknown on a
// lost node, Terminating unless it finished; reason otherwise.
func podTerminatingReason(pod *corev1.Pod, reason string) string {
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeUnreachablePodReason:
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}
	return reason
}

// podIP is the pod's first IP. The real server converts status.podIP into
// status.podIPs when only the former is written; the printer reads the
// latter.
func podIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return pod.Status.PodIP
}

// podReadinessGates is READINESS GATES: passed/all, or <none>.
func podReadinessGates(pod *corev1.Pod) string {
	n := len(pod.Spec.ReadinessGates)
	if n == 0 {
		return "<none>"
	}
	passed := 0
	for _, g := range pod.Spec.ReadinessGates {
		if podConditionTrue(pod, g.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, n)
}

// terminatedReason is a terminated container's reason, or its signal or
// exit code when it has none.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// podConditionTrue reports whether the first condition of the type is True.
func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// printNode: STATUS is Ready or NotReady from the Ready condition (Unknown
// without one), plus SchedulingDisabled for a cordoned node; ROLES come from
// node-role.kubernetes.io/<role> labels and the kubernetes.io/role label.
func printNode(pc *printContext, node *corev1.Node) metav1.TableRow {
	var status []string
	var readyCond *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			readyCond = &node.Status.Conditions[i] // the last one counts
		}
	}
	switch {
	case readyCond == nil:
		status = append(status, "Unknown")
	case readyCond.Status == corev1.ConditionTrue:
		status = append(status, string(corev1.NodeReady))
	default:
		status = append(status, "Not"+string(corev1.NodeReady))
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}

	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix) && len(k) > len(nodeRoleLabelPrefix):
			roles = append(roles, strings.TrimPrefix(k, nodeRoleLabelPrefix))
		case k == nodeRoleLabel && v != "":
			roles = append(roles, v)
		}
	}
	sort.Strings(roles)
	roles = slices.Compact(roles)

	address := func(t corev1.NodeAddressType) string {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	info := node.Status.NodeInfo
	return cells(node.Name, strings.Join(status, ","), orNone(strings.Join(roles, ",")), pc.age(node.CreationTimestamp),
		info.KubeletVersion, address(corev1.NodeInternalIP), address(corev1.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion))
}

// printEvent: LAST SEEN falls back to the first time, and both to the
// eventTime of events written through events.k8s.io; a series overrides the
// last time and the count; OBJECT is kind/name in lower case.
func printEvent(pc *printContext, ev *corev1.Event) metav1.TableRow {
	first := pc.age(ev.FirstTimestamp)
	if ev.FirstTimestamp.IsZero() {
		first = pc.microAge(ev.EventTime)
	}
	last := pc.age(ev.LastTimestamp)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last = pc.microAge(ev.Series.LastObservedTime)
		count = ev.Series.Count
	} else if count == 0 {
		count = 1 // a singleton event written through events.k8s.io
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	source := cmp.Or(ev.Source.Component, ev.ReportingController)
	if host := cmp.Or(ev.Source.Host, ev.ReportingInstance); host != "" {
		source += ", " + host
	}
	return cells(last, ev.Type, ev.Reason, target, ev.InvolvedObject.FieldPath, source,
		strings.TrimSpace(ev.Message), first, int64(count), ev.Name)
}

// coreEventOf is an events.k8s.io event as the core event the real server
// stores it as.
func coreEventOf(e *eventsv1.Event) *corev1.Event {
	ev := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		ev.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return ev
}

func printSecret(pc *printContext, s *corev1.Secret) metav1.TableRow {
	// stringData is write-only on a real server: it is merged into data.
	keys := len(s.Data)
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			keys++
		}
	}
	return cells(s.Name, string(s.Type), int64(keys), pc.age(s.CreationTimestamp))
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

func printStatefulSet(pc *printContext, sts *appsv1.StatefulSet) metav1.TableRow {
	var names, images []string
	for _, c := range sts.Spec.Template.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	// spec.replicas defaults to 1 on a real server.
	desired := derefOr(sts.Spec.Replicas, 1)
	return cells(sts.Name, fmt.Sprintf("%d/%d", sts.Status.ReadyReplicas, desired), pc.age(sts.CreationTimestamp),
		strings.Join(names, ","), strings.Join(images, ","))
}

// templateContainers are the wide columns' container names and images.
func templateContainers(t corev1.PodTemplateSpec) (string, string) {
	var names, images []string
	for _, c := range t.Spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

// selectorString prints a label selector as the real printers do.
func selectorString(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return s.String()
}

func printDeployment(pc *printContext, d *appsv1.Deployment) metav1.TableRow {
	names, images := templateContainers(d.Spec.Template)
	return cells(d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, derefOr(d.Spec.Replicas, 1)),
		int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), pc.age(d.CreationTimestamp),
		names, images, selectorString(d.Spec.Selector))
}

func printReplicaSet(pc *printContext, rs *appsv1.ReplicaSet) metav1.TableRow {
	names, images := templateContainers(rs.Spec.Template)
	return cells(rs.Name, int64(derefOr(rs.Spec.Replicas, 1)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
		pc.age(rs.CreationTimestamp), names, images, selectorString(rs.Spec.Selector))
}

// printControllerRevision names the controller as kind.group/name.
func printControllerRevision(pc *printContext, cr *appsv1.ControllerRevision) metav1.TableRow {
	controller := "<none>"
	if ref := metav1.GetControllerOf(cr); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil {
			gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
			controller = strings.ToLower(gk.String()) + "/" + ref.Name
		}
	}
	return cells(cr.Name, controller, cr.Revision, pc.age(cr.CreationTimestamp))
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
