package diff

import (
	"maps"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/trace"
)

// The names a cluster generates for a snapshot — its content, the CSI
// snapshot's name, the driver's handle — become placeholders named after
// the VolumeSnapshot, so that two clusters' snapshots compare.
func TestSnapshotKindsNormalise(t *testing.T) {
	uid := "0b5e3c4a-1111-2222-3333-444455556666"
	pvc, content, handle := "data", "snapcontent-"+uid, "snap-9f8e7d"
	ready := true
	objs := Objects{
		VolumeSnapshots: []snapv1.VolumeSnapshot{{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default", UID: "0b5e3c4a-1111-2222-3333-444455556666"},
			Spec:   snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvc}},
			Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: &content, ReadyToUse: &ready}}},
		VolumeSnapshotContents: []snapv1.VolumeSnapshotContent{{ObjectMeta: metav1.ObjectMeta{Name: content},
			Spec: snapv1.VolumeSnapshotContentSpec{Driver: "hostpath.csisim.io", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
				VolumeSnapshotRef: corev1.ObjectReference{Namespace: "default", Name: "snap", UID: "0b5e3c4a-1111-2222-3333-444455556666"}},
			Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: &handle, ReadyToUse: &ready}}},
	}
	calls := []trace.Entry{{Kind: trace.CSI, Verb: "CreateSnapshot", Object: "snapshot-" + uid}}
	s := NewNormaliser().Snapshot(objs, calls)
	vs, ok := s.Objects["VolumeSnapshot default/snap"]
	want := map[string]string{"source.persistentVolumeClaimName": "data", "readyToUse": "true",
		"boundVolumeSnapshotContentName": "<content of volumesnapshot default/snap>"}
	if !ok || !maps.Equal(vs.Fields, want) {
		t.Errorf("VolumeSnapshot %+v, want fields %v", vs, want)
	}
	vsc, ok := s.Objects["VolumeSnapshotContent <content of volumesnapshot default/snap>"]
	if !ok || vsc.Fields["snapshotHandle"] != "<handle of volumesnapshot default/snap>" ||
		vsc.Fields["volumeSnapshotRef.uid"] != "<uid of volumesnapshot default/snap>" {
		t.Errorf("VolumeSnapshotContent %+v", vsc)
	}
	if got := s.CSICalls["<snapshot of volumesnapshot default/snap>"]; len(got) != 1 || got[0].Method != "CreateSnapshot" {
		t.Errorf("CSI calls %v", s.CSICalls)
	}
}
