package expand

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

func TestExternalExpanding(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "uid-1"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	claim := func(request string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "uid-1"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	}
	tests := []struct {
		name   string
		claim  *corev1.PersistentVolumeClaim
		queued bool
		events []string
		// expandedMeanwhile: a resizer finished before the sync.
		expandedMeanwhile bool
	}{
		{"a bound claim asking for more", claim("2Gi", corev1.ClaimBound), true, []string{"Normal ExternalExpanding waiting for an external controller to expand this PVC"}, false},
		{"a bound claim of its size", claim("1Gi", corev1.ClaimBound), true, nil, false},
		{"a claim not bound", claim("2Gi", corev1.ClaimPending), false, nil, false},
		{"a claim a resizer expanded meanwhile", claim("2Gi", corev1.ClaimBound), true, []string{"Normal ExternalExpanding waiting for an external controller to expand this PVC"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(pv, tt.claim)
			factory := informers.NewSharedInformerFactory(cs, 0)
			events := record.NewFakeRecorder(10)
			rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
				NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
			c := New(cs, factory, rt)
			if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(tt.claim); err != nil {
				t.Fatal(err)
			}
			c.enqueue(tt.claim)
			if got := c.queue.Len() == 1; got != tt.queued {
				t.Fatalf("queued %t, want %t", got, tt.queued)
			}
			if !tt.queued {
				return
			}
			if tt.expandedMeanwhile {
				done := tt.claim.DeepCopy()
				done.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
				if err := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(done); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.sync(context.Background(), "default/data"); err != nil {
				t.Fatal(err)
			}
			var got []string
			for len(events.Events) > 0 {
				got = append(got, <-events.Events)
			}
			if !slices.Equal(got, tt.events) {
				t.Errorf("events %q, want %q", got, tt.events)
			}
		})
	}
}

// TestMigratedVolumeHandedToItsDriver: a claim of an in-tree aws-ebs PV
// that grows is handed to ebs.csi.aws.com, the driver the plugin migrated
// to, with the real controller's event, and once only.
func TestMigratedVolumeHandedToItsDriver(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "uid-1"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1", FSType: "ext4"}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	cs := fake.NewClientset(pv, claim)
	factory := informers.NewSharedInformerFactory(cs, 0)
	events := record.NewFakeRecorder(10)
	rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
		NewEventRecorder: func(kubernetes.Interface, string, string) (record.EventRecorder, func()) { return events, func() {} }}
	c := New(cs, factory, rt)
	indexer := factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	if err := indexer.Add(claim); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if err := c.sync(context.Background(), "default/data"); err != nil {
			t.Fatal(err)
		}
		got, err := cs.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := got.Annotations[volumeutil.AnnResizer]; r != "ebs.csi.aws.com" {
			t.Errorf("round %d: resizer %q, want ebs.csi.aws.com", round, r)
		}
		if err := indexer.Update(got); err != nil {
			t.Fatal(err)
		}
	}
	patches := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d status patches, want 1 (the second sync finds the resizer named)", patches)
	}
	want := "Normal ExternalExpanding CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc"
	if got := <-events.Events; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
}
