package fakekube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A binding copies the node's zone and region onto the pod, as the
// PodTopologyLabels admission plugin and the binding storage do, and the
// binding's own labels and annotations.
func TestBindingCopiesTopologyLabels(t *testing.T) {
	_, cs := newClient(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
		Labels: map[string]string{corev1.LabelTopologyZone: "zone-a", corev1.LabelTopologyRegion: "r", "other": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{corev1.LabelTopologyZone: "mine"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"b": "1"},
		Annotations: map[string]string{"note": "n"}}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := pods.Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{corev1.LabelTopologyZone: "zone-a", corev1.LabelTopologyRegion: "r", "b": "1", "other": ""} {
		if got := pod.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if pod.Annotations["note"] != "n" {
		t.Errorf("annotations %v, want the binding's note", pod.Annotations)
	}
}

// A binding clears the pod's nominatedNodeName, as the v1.37 binding
// storage does (ClearingNominatedNodeNameAfterBinding).
func TestBindingClearsNomination(t *testing.T) {
	_, cs := newClient(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.NominatedNodeName = "node-a"
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod, err = pods.Get(ctx, "app", metav1.GetOptions{}); err != nil || pod.Status.NominatedNodeName != "" || pod.Spec.NodeName != "node-a" {
		t.Fatalf("after binding: node %q nominated %q (%v)", pod.Spec.NodeName, pod.Status.NominatedNodeName, err)
	}
}
