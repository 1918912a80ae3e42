package snapshotter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

// fakeDriver answers the snapshot calls and keeps what it was asked.
type fakeDriver struct {
	csi.ControllerClient
	createErr error
	calls     []string
	create    *csi.CreateSnapshotRequest
	deleted   string
}

func (d *fakeDriver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest, _ ...grpc.CallOption) (*csi.CreateSnapshotResponse, error) {
	d.calls, d.create = append(d.calls, "CreateSnapshot"), req
	if d.createErr != nil {
		return nil, d.createErr
	}
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "snap-id", SourceVolumeId: req.SourceVolumeId,
		SizeBytes: 1 << 30, ReadyToUse: true, CreationTime: timestamppb.New(time.Unix(100, 0))}}, nil
}

func (d *fakeDriver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest, _ ...grpc.CallOption) (*csi.ListSnapshotsResponse, error) {
	d.calls = append(d.calls, "ListSnapshots")
	if req.SnapshotId != "h1" {
		return &csi.ListSnapshotsResponse{}, nil
	}
	return &csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{{Snapshot: &csi.Snapshot{
		SnapshotId: "h1", SizeBytes: 2 << 30, ReadyToUse: true, CreationTime: timestamppb.New(time.Unix(200, 0))}}}}, nil
}

func (d *fakeDriver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest, _ ...grpc.CallOption) (*csi.DeleteSnapshotResponse, error) {
	d.calls, d.deleted = append(d.calls, "DeleteSnapshot"), req.SnapshotId
	return &csi.DeleteSnapshotResponse{}, nil
}

func (d *fakeDriver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest, ...grpc.CallOption) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{
			Type: csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS}}}}}, nil
}

func ptr[T any](v T) *T { return &v }

func newSnapshotter(t *testing.T, d *fakeDriver, objs ...runtime.Object) (*Snapshotter, *snapfake.Clientset) {
	t.Helper()
	var core, snap []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*corev1.Secret); ok {
			core = append(core, o)
		} else {
			snap = append(snap, o)
		}
	}
	kube, snaps := fake.NewClientset(core...), snapfake.NewSimpleClientset(snap...)
	rt := controller.Runtime{Clock: testingclock.NewFakeClock(time.Unix(1e9, 0)), NewQueue: controller.NewQueue,
		NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) {
			return record.NewFakeRecorder(100), func() {}
		}}
	sf := snapinformers.NewSharedInformerFactory(snaps, 0)
	s := New(Config{DriverName: "drv"}, kube, snaps, sf, d, rt)
	for _, o := range snap {
		var err error
		switch o.(type) {
		case *snapv1.VolumeSnapshotContent:
			err = sf.Snapshot().V1().VolumeSnapshotContents().Informer().GetIndexer().Add(o)
		case *snapv1.VolumeSnapshotClass:
			err = sf.Snapshot().V1().VolumeSnapshotClasses().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s, snaps
}

var class = &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Driver: "drv",
	DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
	Parameters:     map[string]string{"kind": "copy", "csi.storage.k8s.io/snapshotter-secret-name": "s"}}

func dynamicContent() *snapv1.VolumeSnapshotContent {
	return &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-u1",
		Annotations: map[string]string{volumeutil.AnnSnapshotDeletionSecretName: "s", volumeutil.AnnSnapshotDeletionSecretNamespace: "default"}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: "drv", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeSnapshotClassName: ptr("c"),
			VolumeSnapshotRef:       corev1.ObjectReference{Name: "snap", Namespace: "default", UID: "1234-5678"},
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr("vol-1")}}}
}

var secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"key": []byte("v")}}

// CreateSnapshot for a content made from a volume: the request, the
// status, and what becomes of the being-created annotation.
func TestCreateSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name           string
		err            error
		wantAnnotation bool
		wantErr        string
	}{
		{name: "made"},
		{name: "final error", err: status.Error(codes.InvalidArgument, "bad"),
			wantErr: `Failed to create snapshot: failed to take snapshot of the volume vol-1: "rpc error: code = InvalidArgument desc = bad"`},
		{name: "may still be in progress", err: status.Error(codes.DeadlineExceeded, "context deadline exceeded"), wantAnnotation: true,
			wantErr: `Failed to create snapshot: failed to take snapshot of the volume vol-1: "rpc error: code = DeadlineExceeded desc = context deadline exceeded"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDriver{createErr: tc.err}
			s, snaps := newSnapshotter(t, d, class, dynamicContent(), secret)
			err := s.syncByKey(context.Background(), "snapcontent-u1")
			if (err != nil) != (tc.err != nil) {
				t.Fatalf("sync: %v", err)
			}
			if d.create == nil || d.create.Name != "snapshot-1234-5678" || d.create.SourceVolumeId != "vol-1" ||
				len(d.create.Parameters) != 1 || d.create.Parameters["kind"] != "copy" || d.create.Secrets["key"] != "v" {
				t.Fatalf("CreateSnapshot request %v", d.create)
			}
			got, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), "snapcontent-u1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Annotations[volumeutil.AnnSnapshotBeingCreated]; ok != tc.wantAnnotation {
				t.Errorf("annotations %v, want being-created: %t", got.Annotations, tc.wantAnnotation)
			}
			if tc.wantErr != "" {
				if got.Status == nil || got.Status.Error == nil || *got.Status.Error.Message != tc.wantErr || *got.Status.ReadyToUse {
					t.Errorf("status %+v, want the error %q", got.Status, tc.wantErr)
				}
				return
			}
			st := got.Status
			if st == nil || *st.SnapshotHandle != "snap-id" || !*st.ReadyToUse || *st.RestoreSize != 1<<30 || *st.CreationTime != 100e9 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// A pre-provisioned content is listed, not created.
func TestPreProvisionedContent(t *testing.T) {
	for _, tc := range []struct {
		handle  string
		wantErr string
	}{
		{handle: "h1"},
		{handle: "gone", wantErr: `Failed to check and update snapshot content: failed to list snapshot for content imported: "can not find snapshot for snapshotID gone"`},
	} {
		t.Run(tc.handle, func(t *testing.T) {
			content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "imported"},
				Spec: snapv1.VolumeSnapshotContentSpec{Driver: "drv", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
					VolumeSnapshotRef: corev1.ObjectReference{Name: "snap", Namespace: "default", UID: "u"},
					Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr(tc.handle)}}}
			d := &fakeDriver{}
			s, snaps := newSnapshotter(t, d, content)
			err := s.syncByKey(context.Background(), "imported")
			if !slices.Equal(d.calls, []string{"ListSnapshots"}) {
				t.Errorf("calls %v", d.calls)
			}
			got, gerr := snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), "imported", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.wantErr != "" {
				if err == nil || got.Status == nil || got.Status.Error == nil || *got.Status.Error.Message != tc.wantErr {
					t.Errorf("sync %v, status %+v, want %q", err, got.Status, tc.wantErr)
				}
				return
			}
			if err != nil || got.Status == nil || *got.Status.SnapshotHandle != "h1" || *got.Status.RestoreSize != 2<<30 || !*got.Status.ReadyToUse {
				t.Errorf("sync %v, status %+v", err, got.Status)
			}
		})
	}
}

// A content whose snapshot is being deleted: DeleteSnapshot with Delete,
// nothing with Retain or while CreateSnapshot may be in progress; then the
// finalizer goes.
func TestDeleteContent(t *testing.T) {
	for _, tc := range []struct {
		name          string
		policy        snapv1.DeletionPolicy
		beingCreated  bool
		wantCalls     []string
		wantFinalizer bool
	}{
		{name: "Delete", policy: snapv1.VolumeSnapshotContentDelete, wantCalls: []string{"DeleteSnapshot"}},
		{name: "Retain", policy: snapv1.VolumeSnapshotContentRetain},
		{name: "CreateSnapshot in progress", policy: snapv1.VolumeSnapshotContentDelete, beingCreated: true, wantFinalizer: true,
			wantCalls: []string{"CreateSnapshot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := metav1.Now()
			content := dynamicContent()
			content.DeletionTimestamp = &now
			content.Finalizers = []string{volumeutil.VolumeSnapshotContentFinalizer}
			content.Spec.DeletionPolicy = tc.policy
			content.Annotations[volumeutil.AnnSnapshotBeingDeleted] = "yes"
			content.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr("snap-id"), ReadyToUse: ptr(true)}
			if tc.beingCreated {
				content.Annotations[volumeutil.AnnSnapshotBeingCreated] = "yes"
				content.Status.ReadyToUse = ptr(false)
			}
			d := &fakeDriver{}
			s, snaps := newSnapshotter(t, d, class, content, secret)
			_ = s.syncByKey(context.Background(), content.Name)
			if !slices.Equal(d.calls, tc.wantCalls) {
				t.Errorf("calls %v, want %v", d.calls, tc.wantCalls)
			}
			got, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), content.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if has := slices.Contains(got.Finalizers, volumeutil.VolumeSnapshotContentFinalizer); has != tc.wantFinalizer {
				t.Errorf("finalizers %v, want the content finalizer: %t", got.Finalizers, tc.wantFinalizer)
			}
		})
	}
}

func TestSnapshotName(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		uid    string
		length int
		want   string
	}{
		{"snapshot", "1f2e-3d4c", -1, "snapshot-1f2e-3d4c"},
		{"snap", "1f2e-3d4c", 5, "snap-1f2e3"},
	} {
		if got, err := SnapshotName(tc.prefix, tc.uid, tc.length); err != nil || got != tc.want {
			t.Errorf("SnapshotName(%q, %q, %d) = %q, %v; want %q", tc.prefix, tc.uid, tc.length, got, err, tc.want)
		}
	}
	if _, err := SnapshotName("snapshot", "", -1); err == nil {
		t.Error("a snapshot without a UID got a name")
	}
}
