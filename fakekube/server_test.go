package fakekube

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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
	expired, err := pvcs.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from an expired resourceVersion: %v, want an ERROR event", err)
	}
	if ev := <-expired.ResultChan(); !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("watch from an expired resourceVersion: %s %v, want ERROR 410 Gone", ev.Type, ev.Object)
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

// TestSeedMakesUIDsAndNamesReproducible: the same seed and the same writes
// give the same UIDs and generated names; another seed does not.
func TestSeedMakesUIDsAndNamesReproducible(t *testing.T) {
	run := func(seed uint64) []string {
		cs := kubernetes.NewForConfigOrDie(New(Options{Seed: seed}).RESTConfig("test"))
		var out []string
		for i := 0; i < 3; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Namespace: "default"}}
			got, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, got.Name, string(got.UID))
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different results:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("different seeds, same results: %v", a)
	}
}
