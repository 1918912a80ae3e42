package ephemeral

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

func ephemeralPod(deleting bool) *corev1.Pod {
	class := "fast"
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "pod-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						StorageClassName: &class,
						Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				}}}},
		}},
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

type harness struct {
	c      *Controller
	cs     *fake.Clientset
	events *record.FakeRecorder
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	cs := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(cs, 0)
	events := record.NewFakeRecorder(10)
	rt := controller.Runtime{Clock: clock.RealClock{}, NewQueue: controller.NewQueue,
		NewEventRecorder: func(_ kubernetes.Interface, component, _ string) (record.EventRecorder, func()) {
			if component != "ephemeral_volume" {
				t.Errorf("event source %q, want ephemeral_volume", component)
			}
			return events, func() {}
		}}
	c := New(cs, factory, rt)
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.PersistentVolumeClaim:
			err = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &harness{c: c, cs: cs, events: events}
}

func (h *harness) claims(t *testing.T) []corev1.PersistentVolumeClaim {
	t.Helper()
	list, err := h.cs.CoreV1().PersistentVolumeClaims("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func drain(ch <-chan string) []string {
	var out []string
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestCreatesOwnedClaim(t *testing.T) {
	pod := ephemeralPod(false)
	h := newHarness(t, pod)
	h.c.enqueuePod(pod)
	if h.c.queue.Len() != 1 {
		t.Fatalf("queue length %d, want 1", h.c.queue.Len())
	}
	if err := h.c.sync(context.Background(), "default/app"); err != nil {
		t.Fatal(err)
	}
	claims := h.claims(t)
	if len(claims) != 1 {
		t.Fatalf("claims %v", claims)
	}
	c := claims[0]
	if c.Name != "app-scratch" || c.Labels["team"] != "a" || c.Annotations["note"] != "x" ||
		c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "fast" || c.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim %+v", c)
	}
	refs := c.OwnerReferences
	if len(refs) != 1 || refs[0].APIVersion != "v1" || refs[0].Kind != "Pod" || refs[0].Name != "app" || refs[0].UID != "pod-uid" ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("owner references %+v", refs)
	}
	if got := drain(h.events.Events); len(got) != 0 {
		t.Errorf("events %v", got)
	}
}

func TestOwnedClaimLeftAlone(t *testing.T) {
	pod := ephemeralPod(false)
	isTrue := true
	owned := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-scratch", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: "pod-uid", Controller: &isTrue}}}}
	h := newHarness(t, pod, owned)
	if err := h.c.sync(context.Background(), "default/app"); err != nil {
		t.Fatal(err)
	}
	for _, a := range h.cs.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestConflict(t *testing.T) {
	pod := ephemeralPod(false)
	foreign := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-scratch", Namespace: "default"}}
	h := newHarness(t, pod, foreign)
	err := h.c.sync(context.Background(), "default/app")
	if err == nil || !strings.Contains(err.Error(), "pod is not owner") {
		t.Fatalf("sync = %v, want the conflict", err)
	}
	want := []string{"Warning FailedBinding ephemeral volume scratch: PVC default/app-scratch was not created for pod default/app (pod is not owner)"}
	if got := drain(h.events.Events); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if claims := h.claims(t); len(claims) != 1 || len(claims[0].OwnerReferences) != 0 {
		t.Errorf("claims %+v", claims)
	}
}

func TestIgnored(t *testing.T) {
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"}}
	deleting := ephemeralPod(true)
	h := newHarness(t, plain, deleting)
	h.c.enqueuePod(plain)
	h.c.enqueuePod(deleting)
	if h.c.queue.Len() != 0 {
		t.Errorf("queued %d pods, want none", h.c.queue.Len())
	}
	// A pod being deleted gets no claim even if synced.
	if err := h.c.sync(context.Background(), "default/app"); err != nil {
		t.Fatal(err)
	}
	if claims := h.claims(t); len(claims) != 0 {
		t.Errorf("claims %v", claims)
	}
	// A pod that is gone: nothing to do.
	if err := h.c.sync(context.Background(), "default/gone"); err != nil {
		t.Fatal(err)
	}
}

func TestDeletedClaimRequeuesItsPod(t *testing.T) {
	pod := ephemeralPod(false)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-scratch", Namespace: "default"}}
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}}
	h := newHarness(t, pod)
	h.c.onClaimDelete(other)
	if h.c.queue.Len() != 0 {
		t.Fatalf("queued for an unrelated claim")
	}
	h.c.onClaimDelete(claim)
	if h.c.queue.Len() != 1 {
		t.Fatalf("queue length %d, want the pod", h.c.queue.Len())
	}
}
