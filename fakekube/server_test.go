package fakekube

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

func newClient(t *testing.T) (*Server, kubernetes.Interface) {
	t.Helper()
	srv := New(Options{Seed: 1})
	cs, err := kubernetes.NewForConfig(srv.RESTConfig("test"))
	if err != nil {
		t.Fatal(err)
	}
	return srv, cs
}

func testPVC(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: apiresource.MustParse("1Gi")}},
		},
	}
}

func TestResourceVersionConflictAndNoOpUpdate(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	created, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("create did not set uid/resourceVersion/creationTimestamp: %+v", created.ObjectMeta)
	}
	if created.Status.Phase != corev1.ClaimPending {
		t.Errorf("new PVC phase = %q, want Pending", created.Status.Phase)
	}
	if len(created.Finalizers) != 1 || created.Finalizers[0] != PVCProtectionFinalizer {
		t.Errorf("finalizers = %v, want [%s] from admission", created.Finalizers, PVCProtectionFinalizer)
	}

	first := created.DeepCopy()
	first.Labels = map[string]string{"a": "1"}
	updated, err := pvcs.Update(ctx, first, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv(t, updated.ResourceVersion) <= rv(t, created.ResourceVersion) {
		t.Errorf("resourceVersion did not increase: %s -> %s", created.ResourceVersion, updated.ResourceVersion)
	}
	stale := created.DeepCopy()
	stale.Labels = map[string]string{"a": "2"}
	_, err = pvcs.Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: got %v, want 409 Conflict", err)
	}
	want := `Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified; please apply your changes to the latest version and try again`
	if err.Error() != want {
		t.Errorf("conflict message\n got %q\nwant %q", err.Error(), want)
	}
	same, err := pvcs.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != updated.ResourceVersion {
		t.Errorf("an update that changes nothing bumped resourceVersion %s -> %s", updated.ResourceVersion, same.ResourceVersion)
	}
	if _, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: got %v, want AlreadyExists", err)
	}
}

func rv(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return v
}

func TestFinalizersHoldDeletion(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	if _, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pvcs.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := pvcs.Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PVC with a finalizer vanished on delete: %v", err)
	}
	if held.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set")
	}
	held.Finalizers = append(held.Finalizers, "example.com/new")
	if _, err := pvcs.Update(ctx, held, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("adding a finalizer while deleting: got %v, want 422 Invalid", err)
	}
	held.Finalizers = nil
	if _, err := pvcs.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pvcs.Get(ctx, "data", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the last finalizer went: got %v, want NotFound", err)
	}
}

func TestStatusSubresource(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	pvc, _ := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{})
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Labels = map[string]string{"ignored": "yes"}
	got, err := pvcs.UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.ClaimBound || got.Labels["ignored"] != "" {
		t.Errorf("status update: phase %q labels %v; want Bound and no label", got.Status.Phase, got.Labels)
	}
	got.Status.Phase = corev1.ClaimLost
	got.Labels = map[string]string{"kept": "yes"}
	got2, err := pvcs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got2.Status.Phase != corev1.ClaimBound || got2.Labels["kept"] != "yes" {
		t.Errorf("main update: phase %q labels %v; want status unchanged (Bound) and the label", got2.Status.Phase, got2.Labels)
	}
}

func TestPodGracefulDeletionAndBinding(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pods := cs.CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-2"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("second binding: got %v, want Conflict", err)
	}
	bound, _ := pods.Get(ctx, "app", metav1.GetOptions{})
	if bound.Spec.NodeName != "node-1" {
		t.Fatalf("nodeName = %q", bound.Spec.NodeName)
	}
	if err := pods.Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	terminating, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a scheduled pod must wait for its kubelet: %v", err)
	}
	if g := terminating.DeletionGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("deletionGracePeriodSeconds = %v, want 30", g)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after grace 0 delete: %v, want NotFound", err)
	}
}

func TestPatchTypes(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	if _, err := pvcs.Create(ctx, testPVC("data"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pt    types.PatchType
		patch string
		label string
	}{
		{types.MergePatchType, `{"metadata":{"labels":{"x":"merge"}}}`, "merge"},
		{types.StrategicMergePatchType, `{"metadata":{"labels":{"x":"smp"}}}`, "smp"},
		{types.JSONPatchType, `[{"op":"replace","path":"/metadata/labels/x","value":"json"}]`, "json"},
	} {
		got, err := pvcs.Patch(ctx, "data", tc.pt, []byte(tc.patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.pt, err)
		}
		if got.Labels["x"] != tc.label {
			t.Errorf("%s: label x = %q, want %q", tc.pt, got.Labels["x"], tc.label)
		}
	}
	if _, err := pvcs.Patch(ctx, "data", types.MergePatchType, []byte(`{"spec":{"accessModes":["ReadWriteMany"]}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("patching an immutable PVC field: got %v, want Invalid", err)
	}
}

func TestNamespaceMustExistAndNamesValidated(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	elsewhere := testPVC("data")
	elsewhere.Namespace = ""
	if _, err := cs.CoreV1().PersistentVolumeClaims("nope").Create(ctx, elsewhere, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: %v, want NotFound", err)
	}
	bad := testPVC("Bad_Name")
	_, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid name: %v, want Invalid", err)
	}
	noModes := testPVC("nomodes")
	noModes.Spec.AccessModes = nil
	_, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, noModes, metav1.CreateOptions{})
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Details == nil || len(se.Status().Details.Causes) == 0 ||
		se.Status().Details.Causes[0].Field != "spec.accessModes" {
		t.Errorf("missing accessModes: got %v, want Invalid with field spec.accessModes", err)
	}
}

// TestInformerSeesChangesInOrder drives a real SharedInformerFactory, with
// field selectors, against the server.
func TestInformerSeesChangesInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, cs := newClient(t)
	factory := informers.NewSharedInformerFactory(cs, 0)
	vaInformer := factory.Storage().V1().VolumeAttachments().Informer()
	events := make(chan string, 100)
	_, _ = vaInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*storagev1.VolumeAttachment).Name },
		UpdateFunc: func(_, obj any) {
			va := obj.(*storagev1.VolumeAttachment)
			events <- "update " + va.Name + " attached=" + strconv.FormatBool(va.Status.Attached)
		},
		DeleteFunc: func(obj any) { events <- "delete " + obj.(*storagev1.VolumeAttachment).Name },
	})
	pre := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "before"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pv")}}}
	vas := cs.StorageV1().VolumeAttachments()
	if _, err := vas.Create(ctx, pre, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), vaInformer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	va := pre.DeepCopy()
	va.Name = "after"
	created, err := vas.Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Attached = true
	if _, err := vas.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vas.Delete(ctx, "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add before", "add after", "update after attached=true", "delete after"}
	for i, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event %d = %q, want %q", i, got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for event %d %q", i, w)
		}
	}
}

func TestWatchResumeAndGone(t *testing.T) {
	ctx := context.Background()
	srv := New(Options{HistoryLimit: 3})
	cs, _ := kubernetes.NewForConfig(srv.RESTConfig("test"))
	pvcs := cs.CoreV1().PersistentVolumeClaims("default")
	first, _ := pvcs.Create(ctx, testPVC("a"), metav1.CreateOptions{})
	for _, n := range []string{"b", "c", "d", "e"} {
		if _, err := pvcs.Create(ctx, testPVC(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := pvcs.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from an expired resourceVersion: %v, want 410 Gone", err)
	}
	list, _ := pvcs.List(ctx, metav1.ListOptions{})
	d, _ := pvcs.Get(ctx, "d", metav1.GetOptions{})
	w, err := pvcs.Watch(ctx, metav1.ListOptions{ResourceVersion: d.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	if got := ev.Object.(*corev1.PersistentVolumeClaim).Name; got != "e" || ev.Type != "ADDED" {
		t.Errorf("resumed watch first event = %s %s, want ADDED e", ev.Type, got)
	}
	if len(list.Items) != 5 {
		t.Errorf("list has %d items, want 5", len(list.Items))
	}
}

func ptr[T any](v T) *T { return &v }
