package fakekube

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestOwnerGoneDeletesDependentsInTheBackground(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: node.UID}}}}
	if _, err := cs.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, "node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("CSINode owned by a deleted Node: %v, want NotFound", err)
	}
}

func TestOwnedClaimWithFinalizerIsMarkedForDeletion(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	pod := newPod(t, cs, "app")
	claim := testPVC("data")
	claim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: pod.UID}}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim held by pvc-protection must still exist: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Error("the claim of a deleted owner has no deletionTimestamp")
	}
}

func TestForegroundDeletionWaitsForDependents(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	owner := newPod(t, cs, "owner")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Namespace: "default", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "owner", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := cs.CoreV1().Pods("default").Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	held, err := cs.CoreV1().Pods("default").Get(ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("owner deleted in the foreground went before its dependent: %v", err)
	}
	if held.DeletionTimestamp == nil || !slices.Contains(held.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner: deletionTimestamp %v finalizers %v, want set and foregroundDeletion", held.DeletionTimestamp, held.Finalizers)
	}
	dep, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dep", metav1.GetOptions{})
	if err != nil || dep.DeletionTimestamp == nil {
		t.Fatalf("dependent: %v %v, want it being deleted", dep, err)
	}
	dep.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("owner after its last dependent went: %v, want NotFound", err)
	}
}

func TestOrphanDeletionKeepsDependents(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	owner := newPod(t, cs, "owner")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "owner", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := cs.CoreV1().Pods("default").Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("owner: %v, want NotFound", err)
	}
	dep, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dep", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("orphaned dependent was deleted: %v", err)
	}
	if len(dep.OwnerReferences) != 0 {
		t.Errorf("orphaned dependent still has owner references %v", dep.OwnerReferences)
	}
}

func TestNamespaceDeletionEmptiesItFirst(t *testing.T) {
	ctx := context.Background()
	_, cs := newClient(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lab"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := testPVC("data")
	claim.Namespace = "lab"
	if _, err := cs.CoreV1().PersistentVolumeClaims("lab").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "lab", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "lab", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace with a claim held by a finalizer went at once: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("phase = %s, want Terminating", ns.Status.Phase)
	}
	other := testPVC("other")
	other.Namespace = "lab"
	if _, err := cs.CoreV1().PersistentVolumeClaims("lab").Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: %v, want Forbidden", err)
	}
	held, _ := cs.CoreV1().PersistentVolumeClaims("lab").Get(ctx, "data", metav1.GetOptions{})
	held.Finalizers = nil
	if _, err := cs.CoreV1().PersistentVolumeClaims("lab").Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "lab", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("empty terminating namespace: %v, want NotFound", err)
	}
}

func newPod(t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	pod, err := cs.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
