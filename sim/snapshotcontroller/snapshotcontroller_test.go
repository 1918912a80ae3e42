package snapshotcontroller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

type harness struct {
	c      *Controller
	kube   *fake.Clientset
	snaps  *snapfake.Clientset
	events *record.FakeRecorder
	f      informers.SharedInformerFactory
	sf     snapinformers.SharedInformerFactory
}

// newHarness makes a controller whose caches hold objs and whose clients
// know them too.
func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	var core, snap []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *snapv1.VolumeSnapshot, *snapv1.VolumeSnapshotContent, *snapv1.VolumeSnapshotClass,
			*groupsnapv1.VolumeGroupSnapshot, *groupsnapv1.VolumeGroupSnapshotContent, *groupsnapv1.VolumeGroupSnapshotClass:
			snap = append(snap, o)
		default:
			core = append(core, o)
		}
	}
	h := &harness{kube: fake.NewClientset(core...), snaps: snapfake.NewSimpleClientset(snap...), events: record.NewFakeRecorder(100)}
	rt := controller.Runtime{Clock: testingclock.NewFakeClock(time.Unix(1e9, 0)), NewQueue: controller.NewQueue,
		NewQueueWithBackoff: controller.NewQueueWithBackoff,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) {
			return h.events, func() {}
		}}
	f := informers.NewSharedInformerFactory(h.kube, 0)
	sf := snapinformers.NewSharedInformerFactory(h.snaps, 0)
	h.c = New(h.kube, h.snaps, f, sf, rt)
	h.f, h.sf = f, sf
	for _, o := range objs {
		if err := h.cache(o); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// cache puts an object into the controller's informer caches.
func (h *harness) cache(o runtime.Object) error {
	f, sf := h.f, h.sf
	var err error
	{
		switch o.(type) {
		case *groupsnapv1.VolumeGroupSnapshot:
			err = sf.Groupsnapshot().V1().VolumeGroupSnapshots().Informer().GetIndexer().Update(o)
		case *groupsnapv1.VolumeGroupSnapshotContent:
			err = sf.Groupsnapshot().V1().VolumeGroupSnapshotContents().Informer().GetIndexer().Update(o)
		case *groupsnapv1.VolumeGroupSnapshotClass:
			err = sf.Groupsnapshot().V1().VolumeGroupSnapshotClasses().Informer().GetIndexer().Update(o)
		case *corev1.PersistentVolume:
			err = f.Core().V1().PersistentVolumes().Informer().GetIndexer().Update(o)
		case *snapv1.VolumeSnapshot:
			err = sf.Snapshot().V1().VolumeSnapshots().Informer().GetIndexer().Add(o)
		case *snapv1.VolumeSnapshotContent:
			err = sf.Snapshot().V1().VolumeSnapshotContents().Informer().GetIndexer().Add(o)
		case *snapv1.VolumeSnapshotClass:
			err = sf.Snapshot().V1().VolumeSnapshotClasses().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			err = f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		}
	}
	return err
}

func (h *harness) recorded() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func ptr[T any](v T) *T { return &v }

func claim(phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "claim-uid"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	if phase == corev1.ClaimBound {
		c.Spec.VolumeName = "pv-1"
	}
	return c
}

var volume = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
	Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Name: "data", Namespace: "default", UID: "claim-uid"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "drv", VolumeHandle: "vol-1"}}}}

func class(name string, isDefault bool, params map[string]string) *snapv1.VolumeSnapshotClass {
	c := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: "drv",
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Parameters: params}
	if isDefault {
		c.Annotations = map[string]string{volumeutil.AnnIsDefaultSnapshotClass: "true"}
	}
	return c
}

func snapshotOf(className *string) *snapv1.VolumeSnapshot {
	return &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "default", UID: "snap-uid"},
		Spec: snapv1.VolumeSnapshotSpec{VolumeSnapshotClassName: className,
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr("data")}}}
}

// A snapshot of a claim: what the first syncs write, or the error they
// record, in the real controller's words.
func TestSyncDynamicSnapshot(t *testing.T) {
	secretParams := map[string]string{
		"csi.storage.k8s.io/snapshotter-secret-name":      "${volumesnapshot.name}-secret",
		"csi.storage.k8s.io/snapshotter-secret-namespace": "${volumesnapshot.namespace}",
	}
	for _, tc := range []struct {
		name       string
		objs       []runtime.Object
		wantErr    string // in the snapshot's status.error
		wantEvent  string
		wantSecret string // the content's deletion-secret annotations
		wantClass  string
	}{
		{name: "bound claim, named class", objs: []runtime.Object{claim(corev1.ClaimBound), volume, class("c", false, nil), snapshotOf(ptr("c"))},
			wantEvent: "Normal CreatingSnapshot Waiting for a snapshot default/snap to be created by the CSI driver.", wantClass: "c"},
		{name: "the default class of the driver", objs: []runtime.Object{claim(corev1.ClaimBound), volume, class("other", false, nil), class("d", true, nil), snapshotOf(nil)},
			wantEvent: "Normal CreatingSnapshot Waiting for a snapshot default/snap to be created by the CSI driver.", wantClass: "d"},
		{name: "snapshotter secret", objs: []runtime.Object{claim(corev1.ClaimBound), volume, class("c", false, secretParams), snapshotOf(ptr("c"))},
			wantEvent: "Normal CreatingSnapshot", wantSecret: "snap-secret/default", wantClass: "c"},
		{name: "no default class", objs: []runtime.Object{claim(corev1.ClaimBound), volume, class("c", false, nil), snapshotOf(nil)},
			wantErr: "Failed to set default snapshot class with error cannot find default snapshot class"},
		{name: "two default classes", objs: []runtime.Object{claim(corev1.ClaimBound), volume, class("a", true, nil), class("b", true, nil), snapshotOf(nil)},
			wantErr: "Failed to set default snapshot class with error 2 default snapshot classes were found"},
		{name: "missing class", objs: []runtime.Object{claim(corev1.ClaimBound), volume, snapshotOf(ptr("gone"))},
			wantErr: `Failed to get snapshot class with error volumesnapshotclass.snapshot.storage.k8s.io "gone" not found`},
		{name: "unbound claim", objs: []runtime.Object{claim(corev1.ClaimPending), class("c", false, nil), snapshotOf(ptr("c"))},
			wantErr: `Failed to create snapshot content with error failed to get input parameters to create snapshot snap: "the PVC data is not yet bound to a PV, will not attempt to take a snapshot"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.objs...)
			err := h.c.syncSnapshotByKey(context.Background(), "default/snap")
			snap, gerr := h.snaps.SnapshotV1().VolumeSnapshots("default").Get(context.Background(), "snap", metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if tc.wantErr != "" {
				if err == nil {
					t.Fatal("the sync succeeded")
				}
				if snap.Status == nil || snap.Status.Error == nil || *snap.Status.Error.Message != tc.wantErr {
					t.Fatalf("status %+v, want the error %q", snap.Status, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			content, err := h.snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), "snapcontent-snap-uid", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *content.Spec.Source.VolumeHandle != "vol-1" || *content.Spec.VolumeSnapshotClassName != tc.wantClass ||
				content.Spec.VolumeSnapshotRef.UID != "snap-uid" || content.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete {
				t.Errorf("content spec %+v", content.Spec)
			}
			secret := content.Annotations[volumeutil.AnnSnapshotDeletionSecretName] + "/" + content.Annotations[volumeutil.AnnSnapshotDeletionSecretNamespace]
			if tc.wantSecret == "" && len(content.Annotations) > 0 || tc.wantSecret != "" && secret != tc.wantSecret {
				t.Errorf("content annotations %v, want secret %q", content.Annotations, tc.wantSecret)
			}
			if snap.Status == nil || snap.Status.BoundVolumeSnapshotContentName == nil || *snap.Status.BoundVolumeSnapshotContentName != content.Name {
				t.Errorf("snapshot status %+v, want bound to %s", snap.Status, content.Name)
			}
			if !slices.Contains(snap.Finalizers, volumeutil.VolumeSnapshotAsSourceFinalizer) {
				t.Errorf("snapshot finalizers %v", snap.Finalizers)
			}
			pvc, err := h.kube.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
			if err != nil || !slices.Contains(pvc.Finalizers, volumeutil.PVCAsSourceFinalizer) {
				t.Errorf("claim finalizers %v (%v), want the pvc-as-source-protection", pvc.Finalizers, err)
			}
			if ev := h.recorded(); !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, tc.wantEvent) }) {
				t.Errorf("events %q, want %q", ev, tc.wantEvent)
			}
		})
	}
}

// A content whose status has changed brings its snapshot up to date, with
// the SnapshotCreated and SnapshotReady events.
func TestSnapshotFollowsContent(t *testing.T) {
	snap := snapshotOf(ptr("c"))
	snap.Finalizers = []string{volumeutil.VolumeSnapshotAsSourceFinalizer}
	snap.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr("snapcontent-snap-uid"), ReadyToUse: ptr(false)}
	content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-snap-uid",
		Finalizers: []string{volumeutil.VolumeSnapshotContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: "drv", DeletionPolicy: snapv1.VolumeSnapshotContentRetain,
			VolumeSnapshotRef: corev1.ObjectReference{Name: "snap", Namespace: "default", UID: "snap-uid"},
			Source:            snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr("vol-1")}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr("h1"), ReadyToUse: ptr(true),
			CreationTime: ptr(int64(2e18)), RestoreSize: ptr(int64(1 << 30))}}
	h := newHarness(t, claim(corev1.ClaimBound), volume, class("c", false, nil), snap, content)
	if err := h.c.syncSnapshotByKey(context.Background(), "default/snap"); err != nil {
		t.Fatal(err)
	}
	got, err := h.snaps.SnapshotV1().VolumeSnapshots("default").Get(context.Background(), "snap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !isReady(got) || got.Status.RestoreSize.String() != "1Gi" || got.Status.CreationTime.UnixNano() != 2e18 {
		t.Errorf("status %+v", got.Status)
	}
	// Retain: no bound finalizer.
	if slices.Contains(got.Finalizers, volumeutil.VolumeSnapshotBoundFinalizer) {
		t.Errorf("finalizers %v", got.Finalizers)
	}
	want := []string{"Normal SnapshotCreated Snapshot default/snap was successfully created by the CSI driver.",
		"Normal SnapshotReady Snapshot default/snap is ready to use."}
	if ev := h.recorded(); !slices.Equal(ev, want) {
		t.Errorf("events %q, want %q", ev, want)
	}
}

// Deleting a snapshot: a Delete content is marked and deleted and the
// bound finalizer stays; a Retain content is only marked; a snapshot a
// Pending claim restores from waits.
func TestDeleteSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name          string
		policy        snapv1.DeletionPolicy
		restoring     bool
		wantDeleted   bool
		wantFinalizer []string
		wantErr       bool
	}{
		{name: "Delete", policy: snapv1.VolumeSnapshotContentDelete, wantDeleted: true,
			wantFinalizer: []string{volumeutil.VolumeSnapshotBoundFinalizer}},
		{name: "Retain", policy: snapv1.VolumeSnapshotContentRetain},
		{name: "being restored", policy: snapv1.VolumeSnapshotContentDelete, restoring: true, wantErr: true,
			wantFinalizer: []string{volumeutil.VolumeSnapshotAsSourceFinalizer, volumeutil.VolumeSnapshotBoundFinalizer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := metav1.Now()
			snap := snapshotOf(ptr("c"))
			snap.DeletionTimestamp = &now
			snap.Finalizers = []string{volumeutil.VolumeSnapshotAsSourceFinalizer}
			if tc.policy == snapv1.VolumeSnapshotContentDelete {
				snap.Finalizers = append(snap.Finalizers, volumeutil.VolumeSnapshotBoundFinalizer)
			}
			snap.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr("snapcontent-snap-uid"), ReadyToUse: ptr(true)}
			content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-snap-uid"},
				Spec: snapv1.VolumeSnapshotContentSpec{Driver: "drv", DeletionPolicy: tc.policy,
					VolumeSnapshotRef: corev1.ObjectReference{Name: "snap", Namespace: "default", UID: "snap-uid"},
					Source:            snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr("vol-1")}}}
			objs := []runtime.Object{claim(corev1.ClaimBound), volume, class("c", false, nil), snap, content}
			if tc.restoring {
				objs = append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: "default"},
					Spec: corev1.PersistentVolumeClaimSpec{DataSource: &corev1.TypedLocalObjectReference{
						APIGroup: ptr(snapv1.GroupName), Kind: "VolumeSnapshot", Name: "snap"}},
					Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}})
			}
			h := newHarness(t, objs...)
			err := h.c.syncSnapshotByKey(context.Background(), "default/snap")
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v, want an error: %t", err, tc.wantErr)
			}
			got, err := h.snaps.SnapshotV1().VolumeSnapshots("default").Get(context.Background(), "snap", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tc.wantFinalizer) {
				t.Errorf("finalizers %v, want %v", got.Finalizers, tc.wantFinalizer)
			}
			c, err := h.snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), content.Name, metav1.GetOptions{})
			if deleted := err != nil; deleted != tc.wantDeleted {
				t.Errorf("content deleted: %t, want %t", deleted, tc.wantDeleted)
			}
			if err == nil && !tc.restoring && c.Annotations[volumeutil.AnnSnapshotBeingDeleted] != "yes" {
				t.Errorf("content annotations %v", c.Annotations)
			}
		})
	}
}
