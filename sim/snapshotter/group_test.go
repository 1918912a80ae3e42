package snapshotter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"

	"github.com/csisim/csisim/sim/controller"
)

// fakeGroupDriver answers the group calls and keeps what it was asked.
type fakeGroupDriver struct {
	csi.GroupControllerClient
	create  *csi.CreateVolumeGroupSnapshotRequest
	deleted *csi.DeleteVolumeGroupSnapshotRequest
}

func (d *fakeGroupDriver) CreateVolumeGroupSnapshot(_ context.Context, req *csi.CreateVolumeGroupSnapshotRequest, _ ...grpc.CallOption) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	d.create = req
	at := timestamppb.New(time.Unix(100, 0))
	g := &csi.VolumeGroupSnapshot{GroupSnapshotId: "group-1", CreationTime: at, ReadyToUse: true}
	for i, v := range req.SourceVolumeIds {
		g.Snapshots = append(g.Snapshots, &csi.Snapshot{SnapshotId: []string{"s1", "s2"}[i], SourceVolumeId: v, SizeBytes: 1 << 30,
			ReadyToUse: true, CreationTime: at, GroupSnapshotId: "group-1"})
	}
	return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: g}, nil
}

func (d *fakeGroupDriver) DeleteVolumeGroupSnapshot(_ context.Context, req *csi.DeleteVolumeGroupSnapshotRequest, _ ...grpc.CallOption) (*csi.DeleteVolumeGroupSnapshotResponse, error) {
	d.deleted = req
	return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
}

func newGroupSnapshotter(t *testing.T, d *fakeGroupDriver, objs ...runtime.Object) (*Snapshotter, *snapfake.Clientset, snapinformers.SharedInformerFactory) {
	t.Helper()
	snaps := snapfake.NewSimpleClientset(objs...)
	rt := controller.Runtime{Clock: testingclock.NewFakeClock(time.Unix(1e9, 0)), NewQueue: controller.NewQueue,
		NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) {
			return record.NewFakeRecorder(100), func() {}
		}}
	sf := snapinformers.NewSharedInformerFactory(snaps, 0)
	s := New(Config{DriverName: "drv"}, fake.NewClientset(), snaps, sf, &fakeDriver{}, rt).WithGroupController(d, sf, rt)
	for _, o := range objs {
		if err := groupIndexer(sf, o); err != nil {
			t.Fatal(err)
		}
	}
	return s, snaps, sf
}

func groupIndexer(sf snapinformers.SharedInformerFactory, o runtime.Object) error {
	switch o.(type) {
	case *groupsnapv1.VolumeGroupSnapshotContent:
		return sf.Groupsnapshot().V1().VolumeGroupSnapshotContents().Informer().GetIndexer().Update(o)
	case *groupsnapv1.VolumeGroupSnapshotClass:
		return sf.Groupsnapshot().V1().VolumeGroupSnapshotClasses().Informer().GetIndexer().Update(o)
	}
	return nil
}

// A group content is cut with one CreateVolumeGroupSnapshot named after
// its group snapshot, its status lists every member; deleted (policy
// Delete), DeleteVolumeGroupSnapshot gets the members' IDs and the
// finalizer goes.
func TestGroupContentCreateAndDelete(t *testing.T) {
	ctx := context.Background()
	groupClass := &groupsnapv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"}, Driver: "drv",
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Parameters: map[string]string{"x": "y"}}
	content := &groupsnapv1.VolumeGroupSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "groupsnapcontent-g1",
		Finalizers: []string{groupContentFinalizer}},
		Spec: groupsnapv1.VolumeGroupSnapshotContentSpec{Driver: "drv", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeGroupSnapshotClassName: ptr("gc"),
			VolumeGroupSnapshotRef:       corev1ObjectReference("g1"),
			Source:                       groupsnapv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"vol-a", "vol-b"}}}}
	d := &fakeGroupDriver{}
	s, snaps, sf := newGroupSnapshotter(t, d, groupClass, content)
	if err := s.syncGroupByKey(ctx, content.Name); err != nil {
		t.Fatal(err)
	}
	if d.create == nil || d.create.Name != "groupsnapshot-g1" || !slices.Equal(d.create.SourceVolumeIds, []string{"vol-a", "vol-b"}) || d.create.Parameters["x"] != "y" {
		t.Fatalf("CreateVolumeGroupSnapshot %v", d.create)
	}
	got, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if st == nil || *st.VolumeGroupSnapshotHandle != "group-1" || !*st.ReadyToUse || len(st.VolumeSnapshotInfoList) != 2 ||
		st.VolumeSnapshotInfoList[1].SnapshotHandle != "s2" || st.VolumeSnapshotInfoList[1].VolumeHandle != "vol-b" {
		t.Fatalf("status %+v", st)
	}
	if _, ok := got.Annotations[annGroupBeingCreated]; ok {
		t.Fatalf("the being-created annotation stayed: %v", got.Annotations)
	}

	now := metav1.Now()
	got.DeletionTimestamp = &now
	got.Annotations = map[string]string{annGroupBeingDeleted: "yes"}
	if err := groupIndexer(sf, got); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.syncGroupByKey(ctx, content.Name); err != nil {
		t.Fatal(err)
	}
	if d.deleted == nil || d.deleted.GroupSnapshotId != "group-1" || !slices.Equal(d.deleted.SnapshotIds, []string{"s1", "s2"}) {
		t.Fatalf("DeleteVolumeGroupSnapshot %v", d.deleted)
	}
	after, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil || slices.Contains(after.Finalizers, groupContentFinalizer) || after.Status.VolumeGroupSnapshotHandle != nil {
		t.Fatalf("content after deletion %+v, %v", after, err)
	}
}

// A group's member content is never cut, nor deleted, on its own.
func TestMemberContentIsLeftToItsGroup(t *testing.T) {
	member := dynamicContent()
	member.Annotations = map[string]string{groupMemberAnnotation: "group-1"}
	d := &fakeDriver{}
	s, _ := newSnapshotter(t, d, class, member)
	if _, err := s.syncContent(context.Background(), member); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	deleted := member.DeepCopy()
	deleted.DeletionTimestamp = &now
	deleted.Annotations["snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"] = "yes"
	deleted.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr("s1"), VolumeGroupSnapshotHandle: ptr("group-1")}
	if _, err := s.syncContent(context.Background(), deleted); err != nil {
		t.Fatal(err)
	}
	if len(d.calls) != 0 {
		t.Fatalf("CSI calls for a member: %v", d.calls)
	}
}

func corev1ObjectReference(uid string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "VolumeGroupSnapshot", Namespace: "default", Name: "web-snaps", UID: types.UID(uid)}
}
