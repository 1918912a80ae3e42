package fakekube

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"
)

// tableNow is the server's clock in these tests; objects are made five
// minutes before it, so their AGE is "5m".
var (
	tableNow     = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tableCreated = metav1.NewTime(tableNow.Add(-5 * time.Minute))
)

func tblMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: tableCreated}
}

func tblDeleting(m metav1.ObjectMeta) metav1.ObjectMeta {
	t := metav1.NewTime(tableNow)
	m.DeletionTimestamp = &t
	return m
}

func tblQty(n string) apiresource.Quantity { return apiresource.MustParse(n) }

func tblRunning(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: tableCreated}}}
}

func tblWaiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func tblContainers(names ...string) []corev1.Container {
	var cs []corev1.Container
	for _, n := range names {
		cs = append(cs, corev1.Container{Name: n, Image: n + ":1"})
	}
	return cs
}

// TestPrinterCells checks every printer's cells (the full wide set the
// server sends) for representative objects.
func TestPrinterCells(t *testing.T) {
	fs := corev1.PersistentVolumeFilesystem
	block := corev1.PersistentVolumeBlock
	always := corev1.ContainerRestartPolicyAlways
	started := true
	for _, tc := range []struct {
		name         string
		obj          runtime.Object
		defaultClass string
		want         []any
	}{
		{
			name: "bound PVC",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: tblMeta("data"),
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", StorageClassName: ptr("fast"), VolumeMode: &fs,
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: tblQty("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
					Capacity: corev1.ResourceList{corev1.ResourceStorage: tblQty("2Gi")},
					// Listed out of order and twice: printed in the fixed order, once.
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce, corev1.ReadWriteOnce}}},
			want: []any{"data", "Bound", "pv-1", "2Gi", "RWO,RWOP", "fast", "<unset>", "5m", "Filesystem"},
		},
		{
			name: "pending PVC shows no capacity until it names a volume",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: tblMeta("new"),
				Spec: corev1.PersistentVolumeClaimSpec{VolumeAttributesClassName: ptr("gold"),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: tblQty("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
			want: []any{"new", "Pending", "", "", "", "", "gold", "5m", "<unset>"},
		},
		{
			name: "terminating PVC, class from the beta annotation",
			obj: &corev1.PersistentVolumeClaim{ObjectMeta: func() metav1.ObjectMeta {
				m := tblDeleting(tblMeta("old"))
				m.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "legacy"}
				return m
			}(),
				Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("ignored")},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
			want: []any{"old", "Terminating", "", "", "", "legacy", "<unset>", "5m", "<unset>"},
		},
		{
			name: "Released PV",
			obj: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", CreationTimestamp: tableCreated},
				Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: tblQty("1Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadOnlyMany},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data"},
					StorageClassName:              "fast", VolumeMode: &block},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased, Reason: "Lost"}},
			want: []any{"pv-1", "1Gi", "ROX,RWX", "Retain", "Released", "default/data", "fast", "<unset>", "Lost", "5m", "Block"},
		},
		{
			name: "terminating PV without capacity or claim",
			obj: &corev1.PersistentVolume{ObjectMeta: tblDeleting(metav1.ObjectMeta{Name: "pv-2", CreationTimestamp: tableCreated}),
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}},
			want: []any{"pv-2", "0", "", "", "Terminating", "", "", "<unset>", "", "5m", "<unset>"},
		},
		{
			name: "running pod",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"),
				Spec: corev1.PodSpec{NodeName: "node-1", Containers: tblContainers("a", "b"),
					ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}, {ConditionType: "example.com/other"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9",
					PodIPs:            []corev1.PodIP{{IP: "10.0.0.5"}},
					NominatedNodeName: "node-2",
					Conditions:        []corev1.PodCondition{{Type: "example.com/ready", Status: corev1.ConditionTrue}},
					ContainerStatuses: []corev1.ContainerStatus{tblRunning("a", true), tblRunning("b", false)}}},
			want: []any{"app", "1/2", "Running", "0", "5m", "10.0.0.5", "node-1", "node-2", "1/2"},
		},
		{
			name: "terminating pod",
			obj: &corev1.Pod{ObjectMeta: tblDeleting(tblMeta("app")),
				Spec: corev1.PodSpec{NodeName: "node-1", Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5",
					ContainerStatuses: []corev1.ContainerStatus{tblRunning("a", true)}}},
			want: []any{"app", "1/1", "Terminating", "0", "5m", "10.0.0.5", "node-1", "<none>", "<none>"},
		},
		{
			name: "deleted pod on a lost node",
			obj: &corev1.Pod{ObjectMeta: tblDeleting(tblMeta("app")), Spec: corev1.PodSpec{Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost"}},
			want: []any{"app", "0/1", "Unknown", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "creating pod",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"), Spec: corev1.PodSpec{NodeName: "node-1", Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					ContainerStatuses: []corev1.ContainerStatus{tblWaiting("a", "ContainerCreating")}}},
			want: []any{"app", "0/1", "ContainerCreating", "0", "5m", "<none>", "node-1", "<none>", "<none>"},
		},
		{
			name: "unscheduled pod",
			obj:  &corev1.Pod{ObjectMeta: tblMeta("app"), Spec: corev1.PodSpec{Containers: tblContainers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			want: []any{"app", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "scheduling-gated pod",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"), Spec: corev1.PodSpec{Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}},
			want: []any{"app", "0/1", "SchedulingGated", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "restarted pod in a crash loop, the first container's reason wins",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"), Spec: corev1.PodSpec{Containers: tblContainers("a", "b")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					func() corev1.ContainerStatus {
						cs := tblWaiting("a", "CrashLoopBackOff")
						cs.RestartCount = 2
						cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1,
							FinishedAt: metav1.NewTime(tableNow.Add(-90 * time.Second))}
						return cs
					}(),
					{Name: "b", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}},
				}}},
			want: []any{"app", "0/2", "CrashLoopBackOff", "2 (90s ago)", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "pod waiting on its second init container",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"),
				Spec: corev1.PodSpec{InitContainers: tblContainers("i1", "i2"), Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{
						{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
						{Name: "i2", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					},
					ContainerStatuses: []corev1.ContainerStatus{tblWaiting("a", "PodInitializing")}}},
			want: []any{"app", "0/1", "Init:1/2", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "failed init container",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"),
				Spec: corev1.PodSpec{InitContainers: tblContainers("i1"), Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
					{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}}},
			want: []any{"app", "0/1", "Init:ExitCode:2", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "running sidecar counts as a container",
			obj: &corev1.Pod{ObjectMeta: tblMeta("app"),
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always}},
					Containers:     tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}},
					InitContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
						cs := tblRunning("side", true)
						cs.Started = &started
						return cs
					}()},
					ContainerStatuses: []corev1.ContainerStatus{tblRunning("a", true)}}},
			want: []any{"app", "2/2", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "completed pod",
			obj: &corev1.Pod{ObjectMeta: tblDeleting(tblMeta("job")), Spec: corev1.PodSpec{Containers: tblContainers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}}},
			want: []any{"job", "0/1", "Completed", "0", "5m", "<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "not-ready unschedulable node with roles",
			obj: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2", CreationTimestamp: tableCreated,
				Labels: map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "",
					"node-role.kubernetes.io/": "", "kubernetes.io/role": "worker"}},
				Spec: corev1.NodeSpec{Unschedulable: true},
				Status: corev1.NodeStatus{
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
						{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}},
					Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "node-2"},
						{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Debian"}}},
			want: []any{"node-2", "NotReady,SchedulingDisabled", "control-plane,worker", "5m", "v1.37.2",
				"10.0.0.2", "<none>", "Debian", "<unknown>", "<unknown>"},
		},
		{
			name: "node that never reported",
			obj:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3", CreationTimestamp: tableCreated}},
			want: []any{"node-3", "Unknown", "<none>", "5m", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
		{
			name:         "default StorageClass",
			defaultClass: "fast",
			obj: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", CreationTimestamp: tableCreated},
				Provisioner: "hostpath.csi.k8s.io", AllowVolumeExpansion: ptr(true),
				VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer)},
			want: []any{"fast (default)", "hostpath.csi.k8s.io", "Delete", "WaitForFirstConsumer", true, "5m"},
		},
		{
			name:         "other StorageClass",
			defaultClass: "fast",
			obj: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow", CreationTimestamp: tableCreated},
				Provisioner: "p", ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimRetain)},
			want: []any{"slow", "p", "Retain", "Immediate", false, "5m"},
		},
		{
			name: "attached VolumeAttachment",
			obj: &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-123", CreationTimestamp: tableCreated},
				Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csi.k8s.io", NodeName: "node-1",
					Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv-1")}},
				Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			want: []any{"csi-123", "hostpath.csi.k8s.io", "pv-1", "node-1", true, "5m"},
		},
		{
			name: "CSIDriver without defaults",
			obj:  &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "d", CreationTimestamp: tableCreated}},
			want: []any{"d", true, false, false, "<unset>", false, "<none>", "5m"},
		},
		{
			name: "CSIDriver",
			obj: &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "d", CreationTimestamp: tableCreated},
				Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(false), PodInfoOnMount: ptr(true), StorageCapacity: ptr(true),
					RequiresRepublish: ptr(true), TokenRequests: []storagev1.TokenRequest{{Audience: "a"}, {Audience: "b"}},
					VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}},
			want: []any{"d", false, true, true, "a,b", true, "Persistent,Ephemeral", "5m"},
		},
		{
			name: "CSINode",
			obj: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: tableCreated},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "d", NodeID: "node-1"}}}},
			want: []any{"node-1", int64(1), "5m"},
		},
		{
			name: "VolumeAttributesClass",
			obj: &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold", CreationTimestamp: tableCreated},
				DriverName: "d", Parameters: map[string]string{"iops": "3000"}},
			want: []any{"gold", "d", "5m"},
		},
		{
			name: "CSIStorageCapacity",
			obj: &storagev1.CSIStorageCapacity{ObjectMeta: tblMeta("cap"), StorageClassName: "fast",
				Capacity: ptr(tblQty("10Gi"))},
			want: []any{"cap", "fast", "10Gi"},
		},
		{
			name: "core event",
			obj: &corev1.Event{ObjectMeta: tblMeta("data.1"), Type: corev1.EventTypeNormal, Reason: "Provisioning",
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data", FieldPath: "spec"},
				Message:        " External provisioner is provisioning volume \n", Count: 3,
				FirstTimestamp: metav1.NewTime(tableNow.Add(-4 * time.Minute)), LastTimestamp: metav1.NewTime(tableNow.Add(-30 * time.Second)),
				Source: corev1.EventSource{Component: "external-provisioner", Host: "node-1"}},
			want: []any{"30s", "Normal", "Provisioning", "persistentvolumeclaim/data", "spec", "external-provisioner, node-1",
				"External provisioner is provisioning volume", "4m", int64(3), "data.1"},
		},
		{
			name: "events.k8s.io event in a series",
			obj: &eventsv1.Event{ObjectMeta: tblMeta("va.2"), Type: corev1.EventTypeWarning, Reason: "FailedAttach",
				Regarding: corev1.ObjectReference{Kind: "VolumeAttachment"}, Note: "timed out",
				EventTime:           metav1.NewMicroTime(tableNow.Add(-3 * time.Minute)),
				Series:              &eventsv1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(tableNow.Add(-10 * time.Second))},
				ReportingController: "csi-attacher"},
			want: []any{"10s", "Warning", "FailedAttach", "volumeattachment", "", "csi-attacher", "timed out", "3m", int64(7), "va.2"},
		},
		{
			name: "namespace",
			obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", CreationTimestamp: tableCreated},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			want: []any{"kube-system", "Active", "5m"},
		},
		{
			name: "secret counts stringData as the server merges it",
			obj: &corev1.Secret{ObjectMeta: tblMeta("creds"), Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"a": nil}, StringData: map[string]string{"a": "", "b": ""}},
			want: []any{"creds", "Opaque", int64(2), "5m"},
		},
		{
			name: "service account",
			obj:  &corev1.ServiceAccount{ObjectMeta: tblMeta("default"), Secrets: []corev1.ObjectReference{{Name: "t"}}},
			want: []any{"default", int64(1), "5m"},
		},
		{
			name: "config map",
			obj:  &corev1.ConfigMap{ObjectMeta: tblMeta("cfg"), Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"b": nil}},
			want: []any{"cfg", int64(2), "5m"},
		},
		{
			name: "lease",
			obj:  &coordinationv1.Lease{ObjectMeta: tblMeta("leader"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1")}},
			want: []any{"leader", "node-1", "5m"},
		},
		{
			name: "statefulset",
			obj: &appsv1.StatefulSet{ObjectMeta: tblMeta("db"),
				Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(3)),
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: tblContainers("db", "sidecar")}}},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 2}},
			want: []any{"db", "2/3", "5m", "db,sidecar", "db:1,sidecar:1"},
		},
		{
			name: "deployment",
			obj: &appsv1.Deployment{ObjectMeta: tblMeta("web"),
				Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: tblContainers("web")}}},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 2, AvailableReplicas: 1}},
			want: []any{"web", "1/2", int64(2), int64(1), "5m", "web", "web:1", "app=web"},
		},
		{
			name: "replicaset",
			obj: &appsv1.ReplicaSet{ObjectMeta: tblMeta("web-5d4f"),
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "5d4f"}},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: tblContainers("web")}}},
				Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}},
			want: []any{"web-5d4f", int64(2), int64(2), int64(1), "5m", "web", "web:1", "app=web,pod-template-hash=5d4f"},
		},
		{
			name: "controllerrevision",
			obj: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-7f9", CreationTimestamp: tblMeta("x").CreationTimestamp,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: ptr(true)}}}, Revision: 3},
			want: []any{"db-7f9", "statefulset.apps/db", int64(3), "5m"},
		},
		{
			name: "new VolumeSnapshot: absent fields are null cells",
			obj: &snapshotv1.VolumeSnapshot{ObjectMeta: tblMeta("snap"),
				Spec: snapshotv1.VolumeSnapshotSpec{VolumeSnapshotClassName: ptr("csi-snap"),
					Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr("data")}}},
			want: []any{"snap", nil, "data", nil, nil, "csi-snap", nil, nil, "5m"},
		},
		{
			name: "ready VolumeSnapshot",
			obj: &snapshotv1.VolumeSnapshot{ObjectMeta: tblMeta("snap"),
				Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr("content")}},
				Status: &snapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr(true), RestoreSize: ptr(tblQty("1Gi")),
					BoundVolumeSnapshotContentName: ptr("content"), CreationTime: ptr(metav1.NewTime(tableNow.Add(-time.Minute)))}},
			want: []any{"snap", true, nil, "content", "1Gi", nil, "content", "60s", "5m"},
		},
		{
			name: "VolumeSnapshotContent",
			obj: &snapshotv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "content", CreationTimestamp: tableCreated},
				Spec: snapshotv1.VolumeSnapshotContentSpec{Driver: "hostpath.csi.k8s.io", DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete,
					VolumeSnapshotRef: corev1.ObjectReference{Namespace: "default", Name: "snap"}},
				Status: &snapshotv1.VolumeSnapshotContentStatus{ReadyToUse: ptr(false), RestoreSize: ptr(int64(1 << 30))}},
			want: []any{"content", false, int64(1 << 30), "Delete", "hostpath.csi.k8s.io", nil, "snap", "default", "5m"},
		},
		{
			name: "VolumeSnapshotClass",
			obj: &snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "csi-snap", CreationTimestamp: tableCreated},
				Driver: "hostpath.csi.k8s.io", DeletionPolicy: snapshotv1.VolumeSnapshotContentRetain},
			want: []any{"csi-snap", "hostpath.csi.k8s.io", "Retain", "5m"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := printedKind(tc.obj, false)
			p, ok := kindPrinters[kind]
			if !ok {
				t.Fatalf("no printer for %v", kind)
			}
			row := p.row(&printContext{now: tableNow, defaultClass: tc.defaultClass}, tc.obj)
			if !reflect.DeepEqual(row.Cells, tc.want) {
				t.Errorf("cells\n got %#v\nwant %#v", row.Cells, tc.want)
			}
			if len(row.Cells) != len(p.columns) {
				t.Errorf("%d cells for %d columns", len(row.Cells), len(p.columns))
			}
		})
	}
}

// TestPrinterColumns pins the header of each kind, and which columns only
// -o wide shows, to the real server's.
func TestPrinterColumns(t *testing.T) {
	for _, tc := range []struct {
		kind schema.GroupKind
		want string // columns, wide ones marked with *
	}{
		{schema.GroupKind{Kind: "Pod"}, "Name Ready Status Restarts Age *IP *Node *Nominated Node *Readiness Gates"},
		{schema.GroupKind{Kind: "Node"}, "Name Status Roles Age Version *Internal-IP *External-IP *OS-Image *Kernel-Version *Container-Runtime"},
		{schema.GroupKind{Kind: "PersistentVolume"}, "Name Capacity Access Modes Reclaim Policy Status Claim StorageClass VolumeAttributesClass Reason Age *VolumeMode"},
		{schema.GroupKind{Kind: "PersistentVolumeClaim"}, "Name Status Volume Capacity Access Modes StorageClass VolumeAttributesClass Age *VolumeMode"},
		{schema.GroupKind{Kind: "Event"}, "Last Seen Type Reason Object *Subobject *Source Message *First Seen *Count *Name"},
		{schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "Last Seen Type Reason Object *Subobject *Source Message *First Seen *Count *Name"},
		{schema.GroupKind{Kind: "Namespace"}, "Name Status Age"},
		{schema.GroupKind{Kind: "Secret"}, "Name Type Data Age"},
		{schema.GroupKind{Kind: "ServiceAccount"}, "Name Secrets Age"},
		{schema.GroupKind{Kind: "ConfigMap"}, "Name Data Age"},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "Name Ready Age *Containers *Images"},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "Name Ready Up-to-date Available Age *Containers *Images *Selector"},
		{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "Name Desired Current Ready Age *Containers *Images *Selector"},
		{schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, "Name Desired Current Ready Up-to-date Available Node Selector Age *Containers *Images *Selector"},
		{schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}, "Name Controller Revision Age"},
		{schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, "Name Holder Age"},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}, "Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age"},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttachment"}, "Name Attacher PV Node Attached Age"},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSINode"}, "Name Drivers Age"},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIDriver"}, "Name AttachRequired PodInfoOnMount StorageCapacity TokenRequests RequiresRepublish Modes Age"},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}, "Name StorageClassName Capacity"},
		{schema.GroupKind{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}, "Name DriverName Age"},
		{schema.GroupKind{Group: "snapshot.storage.k8s.io", Kind: "VolumeSnapshot"},
			"Name ReadyToUse SourcePVC SourceSnapshotContent RestoreSize SnapshotClass SnapshotContent CreationTime Age"},
		{schema.GroupKind{Group: "snapshot.storage.k8s.io", Kind: "VolumeSnapshotContent"},
			"Name ReadyToUse RestoreSize DeletionPolicy Driver VolumeSnapshotClass VolumeSnapshot VolumeSnapshotNamespace Age"},
		{schema.GroupKind{Group: "snapshot.storage.k8s.io", Kind: "VolumeSnapshotClass"}, "Name Driver DeletionPolicy Age"},
		{schema.GroupKind{Group: "groupsnapshot.storage.k8s.io", Kind: "VolumeGroupSnapshot"},
			"Name ReadyToUse VolumeGroupSnapshotClass VolumeGroupSnapshotContent CreationTime Age"},
		{schema.GroupKind{Group: "groupsnapshot.storage.k8s.io", Kind: "VolumeGroupSnapshotContent"},
			"Name ReadyToUse DeletionPolicy Driver VolumeGroupSnapshotClass VolumeGroupSnapshotNamespace VolumeGroupSnapshot Age"},
		{schema.GroupKind{Group: "groupsnapshot.storage.k8s.io", Kind: "VolumeGroupSnapshotClass"}, "Name Driver DeletionPolicy Age"},
	} {
		p, ok := kindPrinters[tc.kind]
		if !ok {
			t.Errorf("%v: no printer", tc.kind)
			continue
		}
		var got []string
		for _, c := range p.columns {
			name := c.Name
			if c.Priority == 1 {
				name = "*" + name
			}
			got = append(got, name)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%v columns\n got %s\nwant %s", tc.kind, g, tc.want)
		}
	}
	if len(kindPrinters) != 28 {
		t.Errorf("%d printers; a new one needs a line here", len(kindPrinters))
	}
}

func TestEffectiveDefaultStorageClass(t *testing.T) {
	sc := func(name string, created time.Time, ann map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: ann}}
	}
	ga := map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	beta := map[string]string{"storageclass.beta.kubernetes.io/is-default-class": "true"}
	off := map[string]string{"storageclass.kubernetes.io/is-default-class": "false"}
	for _, tc := range []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"none annotated", []*storagev1.StorageClass{sc("a", tableNow, nil), sc("b", tableNow, off)}, ""},
		{"one", []*storagev1.StorageClass{sc("a", tableNow, nil), sc("b", tableNow, ga)}, "b"},
		{"beta annotation counts", []*storagev1.StorageClass{sc("a", tableNow, beta)}, "a"},
		{"the newest wins", []*storagev1.StorageClass{sc("new", tableNow, ga), sc("old", tableNow.Add(-time.Hour), ga)}, "new"},
		{"then the first name", []*storagev1.StorageClass{sc("b", tableNow, ga), sc("a", tableNow, beta)}, "a"},
	} {
		if got := effectiveDefaultClass(tc.classes); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNegotiateResponse(t *testing.T) {
	v1, v1beta1 := metav1.SchemeGroupVersion, schema.GroupVersion{Group: "meta.k8s.io", Version: "v1beta1"}
	const kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	for _, tc := range []struct {
		accept    string
		watch     bool
		wantType  string
		wantTable *schema.GroupVersion
	}{
		{kubectl, false, "application/json", &v1},
		{kubectl, true, "application/json", &v1},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", false, "application/json", &v1beta1},
		{"application/yaml;as=Table;v=v1;g=meta.k8s.io", false, "application/yaml", &v1},
		// YAML cannot frame a watch: the next clause is taken.
		{"application/yaml;as=Table;v=v1;g=meta.k8s.io,application/json", true, "application/json", nil},
		// The real server gives no protobuf Table: the client's next choice.
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io", false, "application/json", &v1},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf", false, "application/vnd.kubernetes.protobuf", nil},
		{"application/json;as=Table;v=v1alpha1;g=meta.k8s.io,application/json", false, "application/json", nil},
		{"application/json;as=Table", false, "application/json", nil},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json", false, "application/json", nil},
		{"*/*", false, "application/json", nil},
		{"", false, "application/json", nil},
	} {
		negotiate := negotiateResponse
		if tc.watch {
			negotiate = negotiateWatch
		}
		got := negotiate(tc.accept)
		if got.info.MediaType != tc.wantType || !reflect.DeepEqual(got.table, tc.wantTable) {
			t.Errorf("Accept %q (watch %v): got %s table %v, want %s table %v", tc.accept, tc.watch,
				got.info.MediaType, got.table, tc.wantType, tc.wantTable)
		}
	}
}

// tableServer serves a new server, whose clock reads tableNow, on a local
// port, and returns it with its URL and a client-go client that talks HTTP.
func tableServer(t *testing.T) (*Server, string, kubernetes.Interface) {
	t.Helper()
	srv := New(Options{Seed: 1, Clock: clocktesting.NewFakePassiveClock(tableCreated.Time)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = l.Close() })
	url := "http://" + l.Addr().String()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, UserAgent: "table-test"})
	if err != nil {
		t.Fatal(err)
	}
	return srv, url, cs
}

// tableAdvanceClock moves the server's clock to tableNow, five minutes after
// the objects were created.
func tableAdvanceClock(t *testing.T, srv *Server) {
	t.Helper()
	srv.clock.(*clocktesting.FakePassiveClock).SetTime(tableNow)
}

func tableGet(t *testing.T, url, accept string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decoding: %v", url, err)
	}
	return body
}

// jsonAt walks decoded JSON along a dotted path ("rows.0.cells.1"):
// numbers index arrays, other segments name fields. nil if it leads nowhere.
func jsonAt(v any, dotted string) any {
	for _, k := range strings.Split(dotted, ".") {
		if i, err := strconv.Atoi(k); err == nil {
			a, _ := v.([]any)
			if i >= len(a) {
				return nil
			}
			v = a[i]
			continue
		}
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// TestTableResponses checks the Table a Go client gets for a list and for
// one object, with each includeObject, over HTTP.
func TestTableResponses(t *testing.T) {
	ctx := context.Background()
	srv, url, cs := tableServer(t)
	created, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testPVC("data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tableAdvanceClock(t, srv)
	const tableV1 = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	listURL := url + "/api/v1/namespaces/default/persistentvolumeclaims"
	one := listURL + "/data"
	for _, tc := range []struct {
		name, url, accept string
		want              map[string]any // JSON paths ("a.b.0.c") and their values
	}{
		{"list", listURL, tableV1, map[string]any{
			"kind": "Table", "apiVersion": "meta.k8s.io/v1",
			"metadata.resourceVersion": srv.store.currentRV(),
			"columnDefinitions.0.name": "Name", "columnDefinitions.0.format": "name",
			"columnDefinitions.8.name": "VolumeMode", "columnDefinitions.8.priority": 1.0,
			"rows.0.cells.0": "data", "rows.0.cells.1": "Pending", "rows.0.cells.7": "5m",
			"rows.0.object.kind": "PartialObjectMetadata", "rows.0.object.apiVersion": "meta.k8s.io/v1",
			"rows.0.object.metadata.name": "data", "rows.0.object.metadata.namespace": "default",
			"rows.0.object.spec": nil,
		}},
		{"v1beta1", listURL, "application/json;as=Table;v=v1beta1;g=meta.k8s.io", map[string]any{
			"kind": "Table", "apiVersion": "meta.k8s.io/v1beta1", "rows.0.object.apiVersion": "meta.k8s.io/v1beta1",
		}},
		{"whole objects", listURL + "?includeObject=Object", tableV1, map[string]any{
			"rows.0.object.kind": "PersistentVolumeClaim", "rows.0.object.apiVersion": "v1",
			"rows.0.object.spec.accessModes.0": "ReadWriteOnce",
		}},
		{"no objects", listURL + "?includeObject=None", tableV1, map[string]any{
			"rows.0.cells.0": "data", "rows.0.object": nil,
		}},
		{"one object", one, tableV1, map[string]any{
			"kind": "Table", "metadata.resourceVersion": created.ResourceVersion,
			"rows.0.cells.0": "data", "rows.0.cells.7": "5m", "rows.1": nil,
		}},
		{"no Table asked", one, "application/json", map[string]any{"kind": "PersistentVolumeClaim"}},
		{"no Table in protobuf", listURL, "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json",
			map[string]any{"kind": "PersistentVolumeClaimList"}},
		{"bad includeObject", listURL + "?includeObject=All", tableV1, map[string]any{
			"kind": "Status", "code": 400.0,
			"message": `Unable to convert to Table as requested: includeObject: Invalid value: "All": must be 'Metadata', 'Object', 'None', or empty`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tableGet(t, tc.url, tc.accept)
			for p, want := range tc.want {
				if got := jsonAt(body, p); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", p, got, want)
				}
			}
		})
	}
}

// TestSingleStorageClassDefault: a single class is "(default)" only if it
// is the effective default among all of them.
func TestSingleStorageClassDefault(t *testing.T) {
	ctx := context.Background()
	srv, url, cs := tableServer(t)
	ann := map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	for _, name := range []string{"b", "a"} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Provisioner: "p"}
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tableAdvanceClock(t, srv)
	const accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	for name, want := range map[string]string{"a": "a (default)", "b": "b"} {
		body := tableGet(t, url+"/apis/storage.k8s.io/v1/storageclasses/"+name, accept)
		if got := jsonAt(body, "rows.0.cells.0"); got != want {
			t.Errorf("GET %s: name cell %v, want %q", name, got, want)
		}
	}
}

// TestWatchTables: each watch event is a one-row Table; only the first
// defines the columns.
func TestWatchTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, url, cs := tableServer(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	for _, n := range []string{"a", "b"} {
		if _, err := pvcs.Create(ctx, testPVC(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/namespaces/default/persistentvolumeclaims?watch=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	dec := json.NewDecoder(resp.Body)
	next := func() map[string]any {
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("reading a watch event: %v", err)
		}
		return ev
	}
	if err := pvcs.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		typ, name, status string
		columns           bool
	}{
		{"ADDED", "a", "Pending", true},
		{"ADDED", "b", "Pending", false},
		{"MODIFIED", "b", "Terminating", false},
	} {
		ev := next()
		if ev["type"] != want.typ || jsonAt(ev, "object.kind") != "Table" {
			t.Fatalf("event %d: %v %v, want a %s Table", i, ev["type"], jsonAt(ev, "object.kind"), want.typ)
		}
		if got := jsonAt(ev, "object.rows.0.cells.0"); got != want.name {
			t.Errorf("event %d: name %v, want %s", i, got, want.name)
		}
		if got := jsonAt(ev, "object.rows.0.cells.1"); got != want.status {
			t.Errorf("event %d: status %v, want %s", i, got, want.status)
		}
		if rows, _ := jsonAt(ev, "object.rows").([]any); len(rows) != 1 {
			t.Errorf("event %d: %d rows, want 1", i, len(rows))
		}
		if cols, _ := jsonAt(ev, "object.columnDefinitions").([]any); (len(cols) > 0) != want.columns {
			t.Errorf("event %d: %d column definitions; want them only in the first event", i, len(cols))
		}
	}
}

// kubectlPath returns the kubectl to run, or skips the test when there is
// none — except in CI (CI=true), where its absence is a failure.
func kubectlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kubectl is not on PATH (CI=true requires it): %v", err)
		}
		t.Skipf("kubectl is not on PATH: %v", err)
	}
	return p
}

// kubectlEnv writes a kubeconfig for url and returns the arguments and
// environment that make kubectl use it and nothing of the user's.
func kubectlEnv(t *testing.T, url string) ([]string, []string) {
	t.Helper()
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fakekube"] = &clientcmdapi.Cluster{Server: url}
	cfg.AuthInfos["fakekube"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["fakekube"] = &clientcmdapi.Context{Cluster: "fakekube", AuthInfo: "fakekube", Namespace: "default"}
	cfg.CurrentContext = "fakekube"
	file := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatalf("writing the kubeconfig: %v", err)
	}
	args := []string{"--kubeconfig", file, "--cache-dir", filepath.Join(dir, "cache")}
	env := append(os.Environ(), "HOME="+dir, "KUBECONFIG="+file)
	return args, env
}

func runKubectl(t *testing.T, kubectl string, base, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubectl, append(append([]string(nil), base...), args...)...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// kubectlTable is one table of kubectl get's output.
type kubectlTable struct {
	header []string
	rows   [][]string
}

// kubectlHeaderColumn matches a column name in kubectl's header: words
// separated by single spaces (columns are separated by at least three).
var kubectlHeaderColumn = regexp.MustCompile(`\S+( \S+)*`)

// parseKubectl splits kubectl get's output into tables (one per kind,
// separated by blank lines) and cuts each row at the header's column
// offsets, so empty cells and cells with spaces come out right.
func parseKubectl(out string) []kubectlTable {
	var tables []kubectlTable
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		lines := strings.Split(block, "\n")
		var offsets []int
		var tbl kubectlTable
		for _, m := range kubectlHeaderColumn.FindAllStringIndex(lines[0], -1) {
			offsets = append(offsets, m[0])
			tbl.header = append(tbl.header, lines[0][m[0]:m[1]])
		}
		for _, line := range lines[1:] {
			var row []string
			for i, off := range offsets {
				end := len(line)
				if i+1 < len(offsets) && offsets[i+1] < end {
					end = offsets[i+1]
				}
				cell := ""
				if off < len(line) {
					cell = strings.TrimSpace(line[off:end])
				}
				row = append(row, cell)
			}
			tbl.rows = append(tbl.rows, row)
		}
		tables = append(tables, tbl)
	}
	return tables
}

// createTableObjects makes one of each kind kubectl get shows in the
// lifecycle, in the states the test expects, with every field the
// printers read set explicitly.
func createTableObjects(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	fs := corev1.PersistentVolumeFilesystem
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sc := cs.StorageV1()
	must(sc.StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "hostpath.csi.k8s.io", ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer), AllowVolumeExpansion: ptr(true)}, metav1.CreateOptions{}))
	must(sc.StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Provisioner: "hostpath.csi.k8s.io", ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimRetain),
		VolumeBindingMode: ptr(storagev1.VolumeBindingImmediate)}, metav1.CreateOptions{}))
	must(sc.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(true), PodInfoOnMount: ptr(true), StorageCapacity: ptr(false),
			RequiresRepublish: ptr(false), TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}},
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}},
		metav1.CreateOptions{}))
	must(sc.CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "hostpath.csi.k8s.io", NodeID: "node-1"}}}},
		metav1.CreateOptions{}))

	pv, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: tblQty("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "fast", VolumeMode: &fs,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "hostpath.csi.k8s.io", VolumeHandle: "vol-1"}}}}, metav1.CreateOptions{})
	must(pv, err)
	pv.Status.Phase = corev1.VolumeBound
	must(cs.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}))

	claim := testPVC("data")
	claim.Spec.VolumeName, claim.Spec.StorageClassName, claim.Spec.VolumeMode = "pv-1", ptr("fast"), &fs
	pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	must(pvc, err)
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: tblQty("1Gi")}}
	must(cs.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{}))

	va, err := sc.VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-0123"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csi.k8s.io", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv-1")}}}, metav1.CreateOptions{})
	must(va, err)
	va.Status.Attached = true
	must(sc.VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}))

	for _, n := range []struct {
		name          string
		ready         corev1.ConditionStatus
		unschedulable bool
		labels        map[string]string
		ip            string
	}{
		{"node-1", corev1.ConditionTrue, false, map[string]string{"node-role.kubernetes.io/control-plane": ""}, "10.0.0.1"},
		{"node-2", corev1.ConditionFalse, true, nil, "10.0.0.2"},
	} {
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels},
			Spec: corev1.NodeSpec{Unschedulable: n.unschedulable}}, metav1.CreateOptions{})
		must(node, err)
		node.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: n.ready}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "csisim", KernelVersion: "6.1", ContainerRuntimeVersion: "csisim://1"}}
		must(cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}))
	}

	pods := cs.CoreV1().Pods("default")
	for _, p := range []struct {
		name, node string
		status     corev1.PodStatus
		del        bool
	}{
		{"app", "node-1", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5",
			ContainerStatuses: []corev1.ContainerStatus{tblRunning("c", true)}}, false},
		{"creating", "node-1", corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{tblWaiting("c", "ContainerCreating")}}, false},
		{"stopping", "node-1", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.6",
			ContainerStatuses: []corev1.ContainerStatus{tblRunning("c", true)}}, true},
		{"unscheduled", "", corev1.PodStatus{}, false},
	} {
		must(pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}))
		if p.node == "" {
			continue
		}
		must(nil, pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Target: corev1.ObjectReference{Kind: "Node", Name: p.node}}, metav1.CreateOptions{}))
		pod, err := pods.Get(ctx, p.name, metav1.GetOptions{})
		must(pod, err)
		pod.Status = p.status
		must(pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}))
		if p.del {
			must(nil, pods.Delete(ctx, p.name, metav1.DeleteOptions{}))
		}
	}
}

// TestKubectlGet runs the real kubectl get against the server and checks
// the headers and cells it prints from the server's Tables.
func TestKubectlGet(t *testing.T) {
	kubectl := kubectlPath(t)
	srv, url, cs := tableServer(t)
	createTableObjects(t, cs)
	tableAdvanceClock(t, srv)
	base, env := kubectlEnv(t, url)

	type table struct {
		header string   // column names, joined by "|"
		rows   []string // each row's cells, joined by "|"
	}
	check := func(args string, want []table) {
		t.Helper()
		out := runKubectl(t, kubectl, base, env, strings.Fields(args)...)
		got := parseKubectl(out)
		if len(got) != len(want) {
			t.Fatalf("kubectl %s: %d tables, want %d:\n%s", args, len(got), len(want), out)
		}
		for i, w := range want {
			if h := strings.Join(got[i].header, "|"); h != w.header {
				t.Errorf("kubectl %s, table %d header\n got %s\nwant %s", args, i, h, w.header)
			}
			var rows []string
			for _, r := range got[i].rows {
				rows = append(rows, strings.Join(r, "|"))
			}
			if !reflect.DeepEqual(rows, w.rows) {
				t.Errorf("kubectl %s, table %d rows\n got %q\nwant %q", args, i, rows, w.rows)
			}
		}
		if t.Failed() {
			t.Logf("kubectl %s printed:\n%s", args, out)
		}
	}

	check("get pvc,pv,sc,volumeattachments,csidrivers,csinodes,pods,nodes", []table{
		{"NAME|STATUS|VOLUME|CAPACITY|ACCESS MODES|STORAGECLASS|VOLUMEATTRIBUTESCLASS|AGE",
			[]string{"persistentvolumeclaim/data|Bound|pv-1|1Gi|RWO|fast|<unset>|5m"}},
		{"NAME|CAPACITY|ACCESS MODES|RECLAIM POLICY|STATUS|CLAIM|STORAGECLASS|VOLUMEATTRIBUTESCLASS|REASON|AGE",
			[]string{"persistentvolume/pv-1|1Gi|RWO|Delete|Bound|default/data|fast|<unset>||5m"}},
		{"NAME|PROVISIONER|RECLAIMPOLICY|VOLUMEBINDINGMODE|ALLOWVOLUMEEXPANSION|AGE", []string{
			"storageclass.storage.k8s.io/fast (default)|hostpath.csi.k8s.io|Delete|WaitForFirstConsumer|true|5m",
			"storageclass.storage.k8s.io/slow|hostpath.csi.k8s.io|Retain|Immediate|false|5m"}},
		{"NAME|ATTACHER|PV|NODE|ATTACHED|AGE",
			[]string{"volumeattachment.storage.k8s.io/csi-0123|hostpath.csi.k8s.io|pv-1|node-1|true|5m"}},
		{"NAME|ATTACHREQUIRED|PODINFOONMOUNT|STORAGECAPACITY|TOKENREQUESTS|REQUIRESREPUBLISH|MODES|AGE",
			[]string{"csidriver.storage.k8s.io/hostpath.csi.k8s.io|true|true|false|vault|false|Persistent,Ephemeral|5m"}},
		{"NAME|DRIVERS|AGE", []string{"csinode.storage.k8s.io/node-1|1|5m"}},
		{"NAME|READY|STATUS|RESTARTS|AGE", []string{
			"pod/app|1/1|Running|0|5m",
			"pod/creating|0/1|ContainerCreating|0|5m",
			"pod/stopping|1/1|Terminating|0|5m",
			"pod/unscheduled|0/1|Pending|0|5m"}},
		{"NAME|STATUS|ROLES|AGE|VERSION", []string{
			"node/node-1|Ready|control-plane|5m|v1.37.2",
			"node/node-2|NotReady,SchedulingDisabled|<none>|5m|v1.37.2"}},
	})
	check("get pods -o wide", []table{
		{"NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES", []string{
			"app|1/1|Running|0|5m|10.244.0.5|node-1|<none>|<none>",
			"creating|0/1|ContainerCreating|0|5m|<none>|node-1|<none>|<none>",
			"stopping|1/1|Terminating|0|5m|10.244.0.6|node-1|<none>|<none>",
			"unscheduled|0/1|Pending|0|5m|<none>|<none>|<none>|<none>"}},
	})
	check("get nodes -o wide", []table{
		{"NAME|STATUS|ROLES|AGE|VERSION|INTERNAL-IP|EXTERNAL-IP|OS-IMAGE|KERNEL-VERSION|CONTAINER-RUNTIME", []string{
			"node-1|Ready|control-plane|5m|v1.37.2|10.0.0.1|<none>|csisim|6.1|csisim://1",
			"node-2|NotReady,SchedulingDisabled|<none>|5m|v1.37.2|10.0.0.2|<none>|csisim|6.1|csisim://1"}},
	})
	// One object: a one-row Table, aged by the server's clock.
	check("get sc fast", []table{
		{"NAME|PROVISIONER|RECLAIMPOLICY|VOLUMEBINDINGMODE|ALLOWVOLUMEEXPANSION|AGE",
			[]string{"fast (default)|hostpath.csi.k8s.io|Delete|WaitForFirstConsumer|true|5m"}},
	})
	// Rows carry metadata, which -A needs for the NAMESPACE column.
	check("get pvc -A", []table{
		{"NAMESPACE|NAME|STATUS|VOLUME|CAPACITY|ACCESS MODES|STORAGECLASS|VOLUMEATTRIBUTESCLASS|AGE",
			[]string{"default|data|Bound|pv-1|1Gi|RWO|fast|<unset>|5m"}},
	})
}

// TestKubectlGetWatch runs kubectl get pvc -w: it prints the claims there
// are, then a row for each change while it watches.
func TestKubectlGetWatch(t *testing.T) {
	kubectl := kubectlPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, url, cs := tableServer(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	if _, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tableAdvanceClock(t, srv)
	base, env := kubectlEnv(t, url)

	cmd := exec.CommandContext(ctx, kubectl, append(base, "get", "pvc", "--watch")...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// kubectl runs until it is killed; the test kills it when done.
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines, done := make(chan string), make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	var seen []string
	expect := func(fields ...string) {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl exited before printing %q; printed %q; stderr:\n%s", fields, seen, stderr.String())
				}
				seen = append(seen, line)
				if f := strings.Fields(line); len(f) >= len(fields) && reflect.DeepEqual(f[:len(fields)], fields) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %q; printed %q; stderr:\n%s", fields, seen, stderr.String())
			}
		}
	}
	expect("NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE")
	expect("data", "Pending")
	// The watch starts after the list; a claim made now is a new row.
	if _, err := pvcs.Create(ctx, testPVC("logs"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("logs", "Pending")
	if err := pvcs.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("data", "Terminating")
}
