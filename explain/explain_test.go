package explain

import (
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/csisim/csisim/sim/volumeutil"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }

func claim(name, class string, phase corev1.PersistentVolumeClaimPhase, volume string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-claim-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: volume, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

func pod(name, node, claimName string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-pod-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	return p
}

func csiPV(name, driver, handle, claimName string) corev1.PersistentVolume {
	return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}},
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: claimName}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
}

func node(name string, ready corev1.ConditionStatus, since time.Duration) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastTransitionTime: at(since)}}}}
}

func csiNode(name string, drivers ...string) storagev1.CSINode {
	n := storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, d := range drivers {
		n.Spec.Drivers = append(n.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name})
	}
	return n
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) storagev1.StorageClass {
	return storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func ev(kind, name, component, reason, message string, ago time.Duration, count int32) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "." + reason},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: name},
		Reason:         reason, Message: message, Source: corev1.EventSource{Component: component},
		FirstTimestamp: at(ago + time.Minute), LastTimestamp: at(ago), Count: count, Type: corev1.EventTypeWarning}
}

func attachment(name, driver, pv, nodeName string, attached bool, finalizers ...string) storagev1.VolumeAttachment {
	return storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: nodeName, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
}

const driver = "hostpath.csisim.io"

func TestExplain(t *testing.T) {
	tests := []struct {
		name   string
		snap   func() *Snapshot
		target Ref
		// want are substrings of the rendered chain, in order.
		want []string
		// cause is a substring of the last finding's object.
		cause string
	}{
		{
			name: "WaitForFirstConsumer claim whose pod cannot be scheduled",
			snap: func() *Snapshot {
				p := pod("app", "", "data")
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."}}
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{claim("data", "wffc", corev1.ClaimPending, "")},
					Classes: []storagev1.StorageClass{class("wffc", driver, storagev1.VolumeBindingWaitForFirstConsumer)},
					Pods:    []corev1.Pod{p},
					Events: []corev1.Event{ev("Pod", "app", "default-scheduler", "FailedScheduling", "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.", 10*time.Second, 3),
						ev("PersistentVolumeClaim", "data", "persistentvolume-controller", "WaitForFirstConsumer", "waiting for first consumer to be created before binding", 5*time.Second, 4)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want: []string{"PersistentVolumeClaim default/data: Pending (WaitForFirstConsumer)", "waiting for first consumer to be created before binding",
				"Pod default/app: Pending, not scheduled", "FailedScheduling (3 times, last 10s ago)", "didn't match Pod's node affinity/selector"},
			cause: "Pod default/app",
		},
		{
			name: "WaitForFirstConsumer claim without a pod",
			snap: func() *Snapshot {
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{claim("data", "wffc", corev1.ClaimPending, "")},
					Classes: []storagev1.StorageClass{class("wffc", driver, storagev1.VolumeBindingWaitForFirstConsumer)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want:   []string{"No pod uses the claim", "Next: Create a pod that uses the claim"},
			cause:  "PersistentVolumeClaim default/data",
		},
		{
			name: "class names a provisioner no driver serves",
			snap: func() *Snapshot {
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{claim("lost", "misspelt", corev1.ClaimPending, "")},
					Classes:  []storagev1.StorageClass{class("misspelt", "hostpath.csisim.oi", storagev1.VolumeBindingImmediate)},
					Drivers:  []storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csisim.oi"}}},
					CSINodes: []storagev1.CSINode{csiNode("node-1", driver)},
					Events: []corev1.Event{ev("PersistentVolumeClaim", "lost", "persistentvolume-controller", "ExternalProvisioning",
						"Waiting for a volume to be created either by the external provisioner 'hostpath.csisim.oi' or manually by the system administrator.", time.Second, 5)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "lost"},
			want:   []string{"names the provisioner hostpath.csisim.oi", "Drivers seen: hostpath.csisim.io", "ExternalProvisioning", "Did you mean hostpath.csisim.io?"},
			cause:  "PersistentVolumeClaim default/lost",
		},
		{
			name: "provisioning fails",
			snap: func() *Snapshot {
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{claim("data", "fast", corev1.ClaimPending, "")},
					Classes:  []storagev1.StorageClass{class("fast", driver, storagev1.VolumeBindingImmediate)},
					CSINodes: []storagev1.CSINode{csiNode("node-1", driver)},
					Events: []corev1.Event{ev("PersistentVolumeClaim", "data", driver+"_csisim", "ProvisioningFailed",
						"failed to provision volume with StorageClass \"fast\": rpc error: code = ResourceExhausted desc = no space", time.Second, 2)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want:   []string{"tries to make its volume and fails", "ProvisioningFailed (2 times, last 1s ago): failed to provision volume", "code = ResourceExhausted"},
			cause:  "PersistentVolumeClaim default/data",
		},
		{
			name: "pod waits for a volume attached to a lost node: force detach due",
			snap: func() *Snapshot {
				old := pod("app-0", "node-a", "data")
				p := pod("app-0", "node-b", "data")
				p.UID = "new"
				na := node("node-a", corev1.ConditionUnknown, 10*time.Minute)
				na.Status.VolumesInUse = []corev1.UniqueVolumeName{uniqueVolumeName(driver, "vol-1")}
				return &Snapshot{Now: now, Pods: []corev1.Pod{p},
					Claims:      []corev1.PersistentVolumeClaim{claim("data", "c", corev1.ClaimBound, "pv-1")},
					Volumes:     []corev1.PersistentVolume{csiPV("pv-1", driver, "vol-1", "data")},
					Nodes:       []corev1.Node{na, node("node-b", corev1.ConditionTrue, time.Hour)},
					CSINodes:    []storagev1.CSINode{csiNode("node-a", driver), csiNode("node-b", driver)},
					Attachments: []storagev1.VolumeAttachment{attachment("csi-a", driver, "pv-1", "node-a", true, volumeutil.AttacherFinalizer(driver))},
					Events: []corev1.Event{ev("Pod", "app-0", "attachdetach-controller", "FailedAttachVolume",
						`Multi-Attach error for volume "pv-1" Volume is already exclusively attached to one node and can't be attached to another`, time.Second, 1)},
					Gone: []GoneObject{{Ref: Ref{Kind: KindPod, Namespace: "default", Name: "app-0"}, At: now.Add(-2 * time.Minute), Pod: &old}}}
			},
			target: Ref{Kind: KindPod, Namespace: "default", Name: "app-0"},
			want: []string{"Pod default/app-0: Pending on node node-b", "Multi-Attach error", "VolumeAttachment csi-a: attached to node-a",
				"Node node-a is not Ready (Ready=Unknown since 10m0s ago)", "left node-a (2m0s ago): due in 4m0s", "out-of-service", "Node node-a: Ready=Unknown"},
			cause: "Node node-a",
		},
		{
			name: "pod waits for a volume attached to a node whose kubelet still uses it",
			snap: func() *Snapshot {
				p := pod("app", "node-b", "data")
				na := node("node-a", corev1.ConditionTrue, time.Hour)
				na.Status.VolumesInUse = []corev1.UniqueVolumeName{uniqueVolumeName(driver, "vol-1")}
				return &Snapshot{Now: now, Pods: []corev1.Pod{p},
					Claims:      []corev1.PersistentVolumeClaim{claim("data", "c", corev1.ClaimBound, "pv-1")},
					Volumes:     []corev1.PersistentVolume{csiPV("pv-1", driver, "vol-1", "data")},
					Nodes:       []corev1.Node{na, node("node-b", corev1.ConditionTrue, time.Hour)},
					Attachments: []storagev1.VolumeAttachment{attachment("csi-a", driver, "pv-1", "node-a", true, volumeutil.AttacherFinalizer(driver))}}
			},
			target: Ref{Kind: KindPod, Namespace: "default", Name: "app"},
			want:   []string{"still reports the volume in use", "FailedUnmount"},
			cause:  "VolumeAttachment csi-a",
		},
		{
			name: "a claim whose new attributes class the driver refused",
			snap: func() *Snapshot {
				c := claim("data", "c", corev1.ClaimBound, "pv-1")
				c.Spec.VolumeAttributesClassName = ptr.To("tiered")
				c.Status.CurrentVolumeAttributesClassName = ptr.To("gold")
				c.Status.ModifyVolumeStatus = &corev1.ModifyVolumeStatus{TargetVolumeAttributesClassName: "tiered",
					Status: corev1.PersistentVolumeClaimModifyVolumeInfeasible}
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{c},
					Volumes: []corev1.PersistentVolume{csiPV("pv-1", driver, "vol-1", "data")},
					Events: []corev1.Event{ev("PersistentVolumeClaim", "data", "external-resizer "+driver, "VolumeModifyFailed",
						"rpc error: code = InvalidArgument desc = mutable parameter \"tier\" is not supported", 10*time.Second, 1)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want:   []string{"modify Infeasible", "refused to modify the volume to the class tiered", "VolumeModifyFailed", "such as the old one (gold)"},
			cause:  "PersistentVolumeClaim default/data",
		},
		{
			name: "a stale attachment on a healthy node",
			snap: func() *Snapshot {
				return &Snapshot{Now: now,
					Claims:      []corev1.PersistentVolumeClaim{claim("data", "c", corev1.ClaimBound, "pv-1")},
					Volumes:     []corev1.PersistentVolume{csiPV("pv-1", driver, "vol-1", "data")},
					Nodes:       []corev1.Node{node("node-a", corev1.ConditionTrue, time.Hour)},
					Attachments: []storagev1.VolumeAttachment{attachment("csi-a", driver, "pv-1", "node-a", true, volumeutil.AttacherFinalizer(driver))}}
			},
			target: Ref{Kind: KindAttachment, Name: "csi-a"},
			want:   []string{"does not use it", "unless it does not know this attachment", "Restart kube-controller-manager"},
			cause:  "VolumeAttachment csi-a",
		},
		{
			name: "no external-attacher",
			snap: func() *Snapshot {
				p := pod("app", "node-1", "data")
				return &Snapshot{Now: now, Pods: []corev1.Pod{p},
					Claims:      []corev1.PersistentVolumeClaim{claim("data", "", corev1.ClaimBound, "nfs")},
					Volumes:     []corev1.PersistentVolume{csiPV("nfs", "nfs.csi.k8s.io", "srv/data", "data")},
					Nodes:       []corev1.Node{node("node-1", corev1.ConditionTrue, time.Hour)},
					Attachments: []storagev1.VolumeAttachment{attachment("csi-n", "nfs.csi.k8s.io", "nfs", "node-1", false)},
					Events: []corev1.Event{ev("Pod", "app", "attachdetach-controller", "FailedAttachVolume",
						`AttachVolume.Attach failed for volume "nfs" : timed out waiting for external-attacher of nfs.csi.k8s.io CSI driver to attach volume srv/data`, time.Second, 2)}}
			},
			target: Ref{Kind: KindPod, Namespace: "default", Name: "app"},
			want:   []string{"VolumeAttachment csi-n: not attached to node-1", "No external-attacher has picked it up", "external-attacher/nfs-csi-k8s-io", "timed out waiting for external-attacher", "attachRequired: false"},
			cause:  "VolumeAttachment csi-n",
		},
		{
			name: "driver not registered on the node",
			snap: func() *Snapshot {
				p := pod("app", "node-1", "data")
				return &Snapshot{Now: now, Pods: []corev1.Pod{p},
					Claims:   []corev1.PersistentVolumeClaim{claim("data", "", corev1.ClaimBound, "elsewhere")},
					Volumes:  []corev1.PersistentVolume{csiPV("elsewhere", "missing.csi.example.com", "vol-e", "data")},
					Drivers:  []storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "missing.csi.example.com"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}},
					Nodes:    []corev1.Node{node("node-1", corev1.ConditionTrue, time.Hour)},
					CSINodes: []storagev1.CSINode{csiNode("node-1", driver)},
					Events: []corev1.Event{ev("Pod", "app", "kubelet", "FailedMount",
						`MountVolume.MountDevice failed for volume "elsewhere" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name missing.csi.example.com not found in the list of registered CSI drivers`, time.Second, 8)}}
			},
			target: Ref{Kind: KindPod, Namespace: "default", Name: "app"},
			want:   []string{"not found in the list of registered CSI drivers", "Node node-1: driver missing.csi.example.com not registered", "CSINode node-1 lists hostpath.csisim.io"},
			cause:  "Node node-1",
		},
		{
			name: "attach fails: CSINode lacks the driver",
			snap: func() *Snapshot {
				p := pod("app", "node-b", "data")
				va := attachment("csi-b", driver, "pv-1", "node-b", false, volumeutil.AttacherFinalizer(driver))
				va.Status.AttachError = &storagev1.VolumeError{Message: "CSINode node-b does not contain driver hostpath.csisim.io", Time: at(time.Second)}
				return &Snapshot{Now: now, Pods: []corev1.Pod{p},
					Claims:      []corev1.PersistentVolumeClaim{claim("data", "c", corev1.ClaimBound, "pv-1")},
					Volumes:     []corev1.PersistentVolume{csiPV("pv-1", driver, "vol-1", "data")},
					Nodes:       []corev1.Node{node("node-b", corev1.ConditionTrue, time.Hour)},
					CSINodes:    []storagev1.CSINode{csiNode("node-b")},
					Attachments: []storagev1.VolumeAttachment{va}}
			},
			target: Ref{Kind: KindPod, Namespace: "default", Name: "app"},
			want:   []string{"external-attacher attachError", "does not contain driver", "Node node-b: driver hostpath.csisim.io not registered", "lists no driver"},
			cause:  "Node node-b",
		},
		{
			name: "claim deletion held by pvc-protection while a pod uses it",
			snap: func() *Snapshot {
				c := claim("data", "c", corev1.ClaimBound, "pv-1")
				c.DeletionTimestamp = ptr.To(at(time.Minute))
				c.Finalizers = []string{volumeutil.PVCProtectionFinalizer}
				p := pod("app", "node-a", "data")
				p.Status.Phase = corev1.PodRunning
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{c}, Pods: []corev1.Pod{p}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want:   []string{"Terminating (deleted 1m0s ago)", "kubernetes.io/pvc-protection: the pvc-protection controller removes it once no pod uses the claim, and pod app (Running on node node-a) still does"},
			cause:  "PersistentVolumeClaim default/data",
		},
		{
			name: "claim held by pvc-protection for a pod terminating on a lost node",
			snap: func() *Snapshot {
				c := claim("data", "c", corev1.ClaimBound, "pv-1")
				c.DeletionTimestamp = ptr.To(at(time.Minute))
				c.Finalizers = []string{volumeutil.PVCProtectionFinalizer}
				p := pod("app", "node-a", "data")
				p.Status.Phase = corev1.PodRunning
				p.DeletionTimestamp = ptr.To(at(2 * time.Minute))
				return &Snapshot{Now: now, Claims: []corev1.PersistentVolumeClaim{c}, Pods: []corev1.Pod{p},
					Nodes: []corev1.Node{node("node-a", corev1.ConditionUnknown, 9*time.Minute)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want:   []string{"pod app (Terminating) still does", "Pod default/app: Terminating (deletion requested 2m0s ago)", "Its node node-a is not Ready", "kubectl delete pod app --force"},
			cause:  "Pod default/app",
		},
		{
			name: "PV deletion held by pv-protection while bound",
			snap: func() *Snapshot {
				pv := csiPV("pv-1", driver, "vol-1", "data")
				pv.DeletionTimestamp = ptr.To(at(time.Minute))
				pv.Finalizers = []string{volumeutil.PVProtectionFinalizer, storagehelpers.PVDeletionProtectionFinalizer}
				return &Snapshot{Now: now, Volumes: []corev1.PersistentVolume{pv}, Claims: []corev1.PersistentVolumeClaim{claim("data", "c", corev1.ClaimBound, "pv-1")}}
			},
			target: Ref{Kind: KindVolume, Name: "pv-1"},
			want:   []string{"kubernetes.io/pv-protection: the pv-protection controller removes it once the volume is no longer Bound; it is bound to claim default/data", "external-provisioner.volume.kubernetes.io/finalizer", "PersistentVolumeClaim default/data: Bound to pv-1"},
			cause:  "PersistentVolumeClaim default/data",
		},
		{
			name: "a bound claim whose pod waits for its driver",
			snap: func() *Snapshot {
				return &Snapshot{Now: now, Pods: []corev1.Pod{pod("app", "node-1", "data")},
					Claims:   []corev1.PersistentVolumeClaim{claim("data", "c", corev1.ClaimBound, "pv-1")},
					Volumes:  []corev1.PersistentVolume{csiPV("pv-1", "other.example.com", "vol-1", "data")},
					Drivers:  []storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: "other.example.com"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}},
					CSINodes: []storagev1.CSINode{csiNode("node-1", driver)}}
			},
			target: Ref{Kind: KindClaim, Namespace: "default", Name: "data"},
			want:   []string{"PersistentVolumeClaim default/data: Bound to pv-1", "pod app, which uses it, is not running yet", "Pod default/app: Pending on node node-1", "Node node-1: driver other.example.com not registered"},
			cause:  "Node node-1",
		},
		{
			name: "snapshot deletion held while a claim is restored from it",
			snap: func() *Snapshot {
				vs := snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "snap", DeletionTimestamp: ptr.To(at(time.Minute)),
					Finalizers: []string{volumeutil.VolumeSnapshotAsSourceFinalizer, volumeutil.VolumeSnapshotBoundFinalizer}},
					Spec:   snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}},
					Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("snapcontent-1"), ReadyToUse: ptr.To(true)}}
				restored := claim("restored", "c", corev1.ClaimPending, "")
				restored.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "snap"}
				return &Snapshot{Now: now, VolumeSnapshots: []snapv1.VolumeSnapshot{vs}, Claims: []corev1.PersistentVolumeClaim{restored}}
			},
			target: Ref{Kind: KindVolumeSnapshot, Namespace: "default", Name: "snap"},
			want: []string{"VolumeSnapshot default/snap: Terminating (deleted 1m0s ago)",
				"snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection: the snapshot-controller removes it once no claim is being restored from the snapshot (pending: restored)",
				"snapshot.storage.kubernetes.io/volumesnapshot-bound-protection: the snapshot-controller removes it once its VolumeSnapshotContent snapcontent-1 is gone"},
			cause: "VolumeSnapshot default/snap",
		},
		{
			name: "running pod: nothing stuck",
			snap: func() *Snapshot {
				p := pod("app", "node-1", "data")
				p.Status.Phase = corev1.PodRunning
				return &Snapshot{Now: now, Pods: []corev1.Pod{p}}
			},
			target: Ref{Kind: KindPod, Namespace: "default", Name: "app"},
			want:   []string{"nothing is stuck"},
			cause:  "Pod default/app",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Explain(tt.snap(), tt.target)
			if err != nil {
				t.Fatal(err)
			}
			out := e.String()
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("want %q (in this order) in:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			if got := e.Cause().Object.String(); !strings.Contains(got, tt.cause) {
				t.Errorf("the chain ends at %s, want %s:\n%s", got, tt.cause, out)
			}
		})
	}
}

func TestExplainMissing(t *testing.T) {
	s := &Snapshot{Now: now, Gone: []GoneObject{{Ref: Ref{Kind: KindPod, Namespace: "default", Name: "old"}, At: now.Add(-time.Minute)}}}
	if _, err := Explain(s, Ref{Kind: KindPod, Namespace: "default", Name: "old"}); err == nil || !strings.Contains(err.Error(), "removed 1m0s ago") {
		t.Errorf("a removed pod: got %v", err)
	}
	if _, err := Explain(s, Ref{Kind: KindClaim, Namespace: "default", Name: "x"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("an unknown claim: got %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		arg, ns string
		want    Ref
		wantErr bool
	}{
		{arg: "pvc/data", want: Ref{Kind: KindClaim, Namespace: "default", Name: "data"}},
		{arg: "PersistentVolumeClaims/data", ns: "team", want: Ref{Kind: KindClaim, Namespace: "team", Name: "data"}},
		{arg: "pv/pvc-1", ns: "team", want: Ref{Kind: KindVolume, Name: "pvc-1"}},
		{arg: "po/app", want: Ref{Kind: KindPod, Namespace: "default", Name: "app"}},
		{arg: "va/csi-1", want: Ref{Kind: KindAttachment, Name: "csi-1"}},
		{arg: "volumeattachments.storage.k8s.io/csi-1", want: Ref{Kind: KindAttachment, Name: "csi-1"}},
		{arg: "vs/snap", want: Ref{Kind: KindVolumeSnapshot, Namespace: "default", Name: "snap"}},
		{arg: "node/node-a", want: Ref{Kind: KindNode, Name: "node-a"}},
		{arg: "deployment/x", wantErr: true},
		{arg: "pvc", wantErr: true},
		{arg: "pvc/", wantErr: true},
		{arg: "pvc/a/b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.arg, tt.ns)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseTarget(%q, %q) = %v, %v; want %v (error: %t)", tt.arg, tt.ns, got, err, tt.want, tt.wantErr)
		}
	}
}
