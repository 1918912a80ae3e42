package pvcontroller

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/sim/controller"
)

// world is a controller over a fake API server whose informer caches hold
// the given objects; a sync sees them, its writes go to the fake server.
type world struct {
	t      *testing.T
	client *fake.Clientset
	ctrl   *Controller
}

func newWorld(t *testing.T, objs ...runtime.Object) *world {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := controller.Runtime{Clock: clk, NewQueue: controller.NewQueue,
		NewEventRecorder: func(c kubernetes.Interface, component, host string) (record.EventRecorder, func()) {
			return controller.NewSyncEventRecorder(c, component, host, clk, nil, nil), func() {}
		}}
	c := New(client, factory, rt)
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *corev1.PersistentVolume:
			err = factory.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			err = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &world{t: t, client: client, ctrl: c}
}

func (w *world) volume(name string) *corev1.PersistentVolume {
	w.t.Helper()
	pv, err := w.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return pv
}

func (w *world) claim(name string) *corev1.PersistentVolumeClaim {
	w.t.Helper()
	c, err := w.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// events are "Reason: message" of the events written, in order.
func (w *world) events() []string {
	w.t.Helper()
	list, err := w.client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	slices.Sort(out)
	return out
}

func staticPV(name, size string) *corev1.PersistentVolume {
	pv := pvOf(name, "manual", size, corev1.ReadWriteOnce)
	pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csisim.io", VolumeHandle: name}
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	return pv
}

func TestClaimAskingForATooSmallVolume(t *testing.T) {
	claim := claimOf("manual", "1Gi", corev1.ReadWriteOnce)
	claim.Spec.VolumeName = "tiny"
	w := newWorld(t, claim, staticPV("tiny", "100Mi"))
	if err := w.ctrl.syncClaim(context.Background(), "ns/data"); err != nil {
		t.Fatal(err)
	}
	if want := []string{`VolumeMismatch: Cannot bind to requested volume "tiny": requested PV is too small`}; !slices.Equal(w.events(), want) {
		t.Errorf("events %q, want %q", w.events(), want)
	}
	if ref := w.volume("tiny").Spec.ClaimRef; ref != nil {
		t.Errorf("volume bound to %v", ref)
	}
}

func TestBindingByVolumeNameAndByClaimRefMarksOnlyTheControllersSide(t *testing.T) {
	byName := claimOf("manual", "1Gi", corev1.ReadWriteOnce)
	byName.Spec.VolumeName = "named"
	reserved := staticPV("reserved", "10Gi")
	reserved.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "reserving"}
	reserving := claimOf("manual", "1Gi", corev1.ReadWriteOnce)
	reserving.Name, reserving.UID = "reserving", "uid-reserving"
	w := newWorld(t, byName, staticPV("named", "2Gi"), reserved, reserving, staticPV("smaller", "1Gi"))
	for _, key := range []string{"ns/data", "ns/reserving"} {
		if err := w.ctrl.syncClaim(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, ann map[string]string, key, want string) {
		t.Helper()
		if got := ann[key]; got != want {
			t.Errorf("%s: %s = %q, want %q", what, key, got, want)
		}
	}
	check("claim by name", w.claim("data").Annotations, storagehelpers.AnnBoundByController, "")
	check("claim by name", w.claim("data").Annotations, storagehelpers.AnnBindCompleted, "yes")
	check("volume named", w.volume("named").Annotations, storagehelpers.AnnBoundByController, "yes")
	check("claim reserving", w.claim("reserving").Annotations, storagehelpers.AnnBoundByController, "yes")
	check("volume reserved", w.volume("reserved").Annotations, storagehelpers.AnnBoundByController, "")
	if got := w.claim("reserving").Spec.VolumeName; got != "reserved" {
		t.Errorf("reserving claim bound to %q, want the reserved volume", got)
	}
	if got := w.volume("reserved").Spec.ClaimRef.UID; got != "uid-reserving" {
		t.Errorf("reserved volume's claimRef UID %q", got)
	}
	if got := w.claim("data").Status; got.Phase != corev1.ClaimBound || got.Capacity.Storage().Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("claim status %+v, want Bound with the volume's 2Gi", got)
	}
}

func TestBoundClaimWhoseVolumeIsGoneIsLost(t *testing.T) {
	claim := claimOf("manual", "1Gi", corev1.ReadWriteOnce)
	claim.Spec.VolumeName = "gone"
	claim.Annotations = map[string]string{storagehelpers.AnnBindCompleted: "yes"}
	claim.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	w := newWorld(t, claim)
	if err := w.ctrl.syncClaim(context.Background(), "ns/data"); err != nil {
		t.Fatal(err)
	}
	got := w.claim("data").Status
	if got.Phase != corev1.ClaimLost || got.Capacity != nil {
		t.Errorf("claim status %+v, want Lost without capacity", got)
	}
	if want := []string{"ClaimLost: Bound claim has lost its PersistentVolume. Data on the volume is lost!"}; !slices.Equal(w.events(), want) {
		t.Errorf("events %q, want %q", w.events(), want)
	}
}

func TestReleasedVolumesByReclaimPolicy(t *testing.T) {
	released := func(pv *corev1.PersistentVolume, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
		pv.Spec.PersistentVolumeReclaimPolicy = policy
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "gone", UID: "uid-gone"}
		pv.Status.Phase = corev1.VolumeBound
		return pv
	}
	nfs := released(pvOf("nfs", "", "1Gi", corev1.ReadWriteMany), corev1.PersistentVolumeReclaimDelete)
	nfs.Spec.NFS = &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/export"}
	retained := released(staticPV("retained", "1Gi"), corev1.PersistentVolumeReclaimRetain)
	csi := released(staticPV("csi", "1Gi"), corev1.PersistentVolumeReclaimDelete)
	w := newWorld(t, nfs, retained, csi)
	for _, name := range []string{"nfs", "retained", "csi"} {
		if err := w.ctrl.syncVolume(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]corev1.PersistentVolumePhase{"nfs": corev1.VolumeFailed, "retained": corev1.VolumeReleased, "csi": corev1.VolumeReleased} {
		if got := w.volume(name).Status.Phase; got != want {
			t.Errorf("%s: phase %s, want %s", name, got, want)
		}
	}
	if got := w.volume("retained").Spec.ClaimRef; got == nil || got.Name != "gone" {
		t.Errorf("retained volume's claimRef %v, want it kept", got)
	}
	want := []string{`VolumeFailedDelete: error getting deleter volume plugin for volume "nfs": no deletable volume plugin matched`}
	if !slices.Equal(w.events(), want) {
		t.Errorf("events %q, want %q", w.events(), want)
	}
}

func TestVolumeTheControllerBoundToAClaimBoundElsewhereIsFreed(t *testing.T) {
	claim := claimOf("manual", "1Gi", corev1.ReadWriteOnce)
	claim.Spec.VolumeName = "other"
	stale := staticPV("stale", "1Gi")
	stale.Annotations = map[string]string{storagehelpers.AnnBoundByController: "yes"}
	stale.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: claim.UID}
	stale.Status.Phase = corev1.VolumeBound
	adminBound := staticPV("admin", "1Gi")
	adminBound.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: claim.UID}
	adminBound.Status.Phase = corev1.VolumeBound
	w := newWorld(t, claim, stale, adminBound)
	for _, name := range []string{"stale", "admin"} {
		if err := w.ctrl.syncVolume(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	if pv := w.volume("stale"); pv.Spec.ClaimRef != nil || pv.Annotations[storagehelpers.AnnBoundByController] != "" || pv.Status.Phase != corev1.VolumeAvailable {
		t.Errorf("controller's binding not undone: claimRef %v, annotations %v, phase %s", pv.Spec.ClaimRef, pv.Annotations, pv.Status.Phase)
	}
	if pv := w.volume("admin"); pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "data" || pv.Spec.ClaimRef.UID != "" {
		t.Errorf("admin's binding: claimRef %v, want the name kept and the UID cleared", pv.Spec.ClaimRef)
	}
}

// TestAnInformerBehindTheBindersWritesIsSkipped: a claim the binder wrote
// at version 7 is not synced again from an informer's copy at version 5 (an
// informer behind, after an API server outage), as the real controller's
// own cache skips it; the same version and newer ones are synced.
func TestAnInformerBehindTheBindersWritesIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		informer string
		wantBind bool
	}{{"5", false}, {"7", true}, {"8", true}} {
		claim := claimOf("manual", "1Gi", corev1.ReadWriteOnce)
		claim.ResourceVersion = tc.informer
		claim.Spec.VolumeName = "named"
		w := newWorld(t, claim, staticPV("named", "2Gi"))
		w.ctrl.claimVersions.wrote("ns/data", "7")
		if err := w.ctrl.syncClaim(context.Background(), "ns/data"); err != nil {
			t.Fatal(err)
		}
		if bound := w.volume("named").Spec.ClaimRef != nil; bound != tc.wantBind {
			t.Errorf("informer at version %s: volume bound %v, want %v", tc.informer, bound, tc.wantBind)
		}
	}
}

func TestNewestVersions(t *testing.T) {
	var n newest
	for _, step := range []struct {
		op, key, rv string
		want        bool
	}{
		{"fresh", "a", "3", true},
		{"fresh", "a", "2", false}, // older than seen
		{"fresh", "a", "3", true},  // the same passes: a resync
		{"wrote", "a", "9", true},
		{"fresh", "a", "4", false}, // older than written
		{"fresh", "b", "1", true},  // keys apart
		{"fresh", "a", "x", true},  // no number: nothing to compare
		{"forget", "a", "", true},
		{"fresh", "a", "1", true}, // gone and made again
	} {
		got := true
		switch step.op {
		case "fresh":
			got = n.fresh(step.key, step.rv)
		case "wrote":
			n.wrote(step.key, step.rv)
		case "forget":
			n.forget(step.key)
		}
		if got != step.want {
			t.Errorf("%s(%s, %s) = %v, want %v", step.op, step.key, step.rv, got, step.want)
		}
	}
}
