package trace

import (
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// sampleTimeline is a small run with every kind of entry and of structured
// data, and text the formats must escape, as the formats' tests read it.
func sampleTimeline() Timeline {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "uid-claim", CreationTimestamp: created,
			Annotations: map[string]string{"note": `</script><b>"quoted"; #1 & 50%`}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	bound := claim.DeepCopy()
	bound.Spec.VolumeName = "pvc-1"
	bound.Status.Phase = corev1.ClaimBound
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "vol-1"}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-1", Volumes: []corev1.Volume{{Name: "v",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	pvName := "pvc-1"
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-123"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}}
	event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.1", Namespace: "default"}, Reason: "Scheduled",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "app"}}
	coreEvent := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "data.1", Namespace: "default"}, Reason: "Provisioning",
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data"}}
	src := "data"
	snap := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default"},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: &src}}}
	write := func(verb, sub string, obj runtime.Object, kind, ns, name string) *APIWrite {
		return &APIWrite{Verb: verb, Subresource: sub, Kind: kind, Namespace: ns, Name: name, Object: obj}
	}
	entries := []Entry{
		{Kind: Step, Actor: "scenario", Verb: "create", Object: "PersistentVolumeClaim data", Detail: "step 1"},
		{Kind: API, Actor: "scenario", Verb: "create", Object: "PersistentVolumeClaim default/data", Detail: "phase=Pending",
			Write: write("create", "", claim, "PersistentVolumeClaim", "default", "data")},
		{Kind: Step, Actor: "", Verb: "wait", Detail: "a step of an unnamed actor"},
		{Kind: CSI, Actor: "external-provisioner", Verb: "CreateVolume", Object: "vol-1", Detail: "OK", Wall: 3 * time.Millisecond,
			Call: &CSICall{Volume: "vol-1", Name: "pvc-1", AccessMode: "SINGLE_NODE_WRITER", Code: codes.OK, StartedAfter: 2, Started: time.Second}},
		{Kind: API, Actor: "external-provisioner", Verb: "create", Object: "PersistentVolume pvc-1", Write: write("create", "", pv, "PersistentVolume", "", "pvc-1")},
		{Kind: API, Actor: "persistentvolume-binder", Verb: "update status", Object: "PersistentVolumeClaim default/data",
			Write: write("update", "status", bound, "PersistentVolumeClaim", "default", "data")},
		{Kind: API, Actor: "scenario", Verb: "create", Object: "Pod default/app", Write: write("create", "", pod, "Pod", "default", "app")},
		{Kind: API, Actor: "attachdetach-controller", Verb: "create", Object: "VolumeAttachment csi-123",
			Write: write("create", "", va, "VolumeAttachment", "", "csi-123")},
		{Kind: API, Actor: "default-scheduler", Verb: "create", Object: "Event for Pod default/app",
			Write: write("create", "", event, "Event", "default", "app.1")},
		{Kind: API, Actor: "external-provisioner", Verb: "create", Object: "Event for PersistentVolumeClaim default/data",
			Write: write("create", "", coreEvent, "Event", "default", "data.1")},
		{Kind: Fault, Actor: "fault-injector", Verb: "csi-error", Object: "NodeStageVolume", Detail: "code=Internal; after #5 <now>"},
		{Kind: CSI, Actor: "kubelet:node-1", Verb: "NodeStageVolume", Object: "vol-1", Detail: "Internal", Err: "rpc error: code = Internal desc = injected; retry",
			Call: &CSICall{Node: "node-1", NodeID: "node-1", Volume: "vol-1", StagingPath: "/var/lib/kubelet/x", AccessMode: "SINGLE_NODE_WRITER",
				Block: true, ReadOnly: true, Ephemeral: true, Code: codes.Internal, StartedAfter: 9, Started: 2 * time.Second}},
		{Kind: CSI, Actor: "kubelet:node-1", Verb: "NodeGetCapabilities", Detail: "OK",
			Call: &CSICall{Node: "node-1", Code: codes.OK, Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}, StartedAfter: 10, Started: 2 * time.Second}},
		{Kind: Data, Actor: "workload/default/app", Verb: "check", Object: "data", Detail: "wrote",
			Check: &DataCheck{PodUID: "uid-pod", Namespace: "default", Pod: "app", Claim: "data", Volume: "pvc-1", Wrote: true,
				Found: []string{"uid-pod"}, Corrupt: []string{"uid-old"}, Copied: []string{"uid-x"}, Err: "short read"}},
		{Kind: API, Actor: "snapshot-controller", Verb: "delete", Object: "VolumeSnapshot default/snap", Detail: "removed",
			Write: &APIWrite{Verb: "delete", Kind: "VolumeSnapshot", Namespace: "default", Name: "snap", Object: snap, Removed: true}},
		{Kind: Step, Actor: "scenario", Verb: "expect", Detail: "multi\nline", Err: "timed out"},
	}
	for i := range entries {
		entries[i].Seq = i + 1
		entries[i].At = time.Duration(i) * 1500 * time.Millisecond
	}
	return Timeline{Entries: entries, Violations: []Violation{
		{Invariant: "single-node", Message: "volume vol-1 staged on node-1 while #4; <bad>", Entries: []int{4, 12}},
		{Invariant: "nothing-leaked", Message: "at the end"},
	}}
}

func TestLanes(t *testing.T) {
	var got []string
	for _, l := range sampleTimeline().lanes() {
		got = append(got, l.ID+"="+l.Title)
	}
	want := []string{"scenario=scenario", "kube-apiserver=API server", "=(unknown)", "external-provisioner=external-provisioner",
		"persistentvolume-binder=persistentvolume-binder", "attachdetach-controller=attachdetach-controller",
		"default-scheduler=default-scheduler", "fault-injector=fault-injector", "kubelet:node-1=kubelet:node-1",
		"workload/default/app=workload/default/app", "snapshot-controller=snapshot-controller",
		"csi-controller=CSI controller plugin", "csi-node/node-1=CSI node plugin node-1"}
	if len(got) != len(want) {
		t.Fatalf("lanes:\n%q\nwant\n%q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("lane %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestViolationAt(t *testing.T) {
	tl := sampleTimeline()
	for _, tt := range []struct {
		v    Violation
		want int
	}{
		{tl.Violations[0], 12},
		{tl.Violations[1], len(tl.Entries)},
		{Violation{Entries: []int{3, 999}}, 3},
	} {
		if got := tl.violationAt(tt.v).Seq; got != tt.want {
			t.Errorf("violationAt(%v) = #%d, want #%d", tt.v.Entries, got, tt.want)
		}
	}
	if got := (Timeline{Violations: []Violation{{}}}).violationAt(Violation{}); got.Seq != 0 || got.At != 0 {
		t.Errorf("violationAt in an empty timeline = %+v, want the start", got)
	}
}
