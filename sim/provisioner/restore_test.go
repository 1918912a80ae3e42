package provisioner

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// A claim restored from a VolumeSnapshot: the checks of the sidecar's
// getSnapshotSource, in its order and words.
func TestSnapshotSource(t *testing.T) {
	ready := func(s *snapv1.VolumeSnapshot) { s.Status.ReadyToUse = ptrTo(true) }
	for _, tc := range []struct {
		name       string
		snapshot   func(*snapv1.VolumeSnapshot)
		content    func(*snapv1.VolumeSnapshotContent)
		request    string
		dataSource *corev1.TypedLocalObjectReference
		wantErr    string
		wantHandle string
	}{
		{name: "ready", snapshot: ready, wantHandle: "h1"},
		{name: "not bound", snapshot: func(s *snapv1.VolumeSnapshot) { s.Status = nil },
			wantErr: "error getting handle for DataSource Type VolumeSnapshot by Name snap: snapshot snap not bound"},
		{name: "not ready", wantErr: "error getting handle for DataSource Type VolumeSnapshot by Name snap: snapshot snap is not Ready"},
		{name: "another driver's", snapshot: ready, content: func(c *snapv1.VolumeSnapshotContent) { c.Spec.Driver = "other" },
			wantErr: "error getting handle for DataSource Type VolumeSnapshot by Name snap: snapshotcontent snapcontent-1 for snapshot snap is not handled by CSI driver of StorageClass fast"},
		{name: "bound elsewhere", snapshot: ready, content: func(c *snapv1.VolumeSnapshotContent) { c.Spec.VolumeSnapshotRef.UID = "x" },
			wantErr: "error getting handle for DataSource Type VolumeSnapshot by Name snap: snapshotcontent snapcontent-1 for snapshot snap is bound to a different snapshot"},
		{name: "smaller than the snapshot", snapshot: ready, request: "512Mi",
			wantErr: "error getting handle for DataSource Type VolumeSnapshot by Name snap: requested volume size 536870912 is less than the size 1073741824 for the source snapshot snap"},
		{name: "no such snapshot", dataSource: &corev1.TypedLocalObjectReference{APIGroup: ptrTo(snapv1.GroupName), Kind: "VolumeSnapshot", Name: "gone"},
			wantErr: `error getting handle for DataSource Type VolumeSnapshot by Name gone: error getting snapshot gone from api server: volumesnapshots.snapshot.storage.k8s.io "gone" not found`},
		{name: "wrong group", dataSource: &corev1.TypedLocalObjectReference{APIGroup: ptrTo("example.com"), Kind: "VolumeSnapshot", Name: "snap"},
			wantErr: "the PVC source does not belong to the right APIGroup. Expected snapshot.storage.k8s.io, Got example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default", UID: "s1"},
				Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptrTo("snapcontent-1"), ReadyToUse: ptrTo(false),
					RestoreSize: resource.NewQuantity(1<<30, resource.BinarySI)}}
			content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-1"},
				Spec: snapv1.VolumeSnapshotContentSpec{Driver: "drv",
					VolumeSnapshotRef: corev1.ObjectReference{Name: "snap", Namespace: "default", UID: "s1"}},
				Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptrTo("h1")}}
			if tc.snapshot != nil {
				tc.snapshot(snap)
			}
			if tc.content != nil {
				tc.content(content)
			}
			p := &Provisioner{cfg: Config{DriverName: "drv", Snapshots: snapfake.NewSimpleClientset(snap, content)},
				events: record.NewFakeRecorder(10)}
			request := tc.request
			if request == "" {
				request = "1Gi"
			}
			ds := tc.dataSource
			if ds == nil {
				ds = &corev1.TypedLocalObjectReference{APIGroup: ptrTo(snapv1.GroupName), Kind: "VolumeSnapshot", Name: "snap"}
			}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: "default"},
				Spec: corev1.PersistentVolumeClaimSpec{DataSource: ds,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}}}
			class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "drv"}
			var src *csi.VolumeContentSource
			ds2, err := p.dataSource(claim)
			if err == nil {
				src, err = p.contentSource(context.Background(), claim, class, ds2)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := src.GetSnapshot().GetSnapshotId(); got != tc.wantHandle {
				t.Errorf("content source %v, want snapshot %s", src, tc.wantHandle)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
