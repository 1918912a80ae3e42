package kubelist

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAll(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	var nodes []corev1.Node
	var pods []corev1.Pod
	err := All(ctx, metav1.ListOptions{}, []Kind{
		Into("nodes", &nodes, cs.CoreV1().Nodes().List, func(l *corev1.NodeList) []corev1.Node { return l.Items }),
		Into("pods", &pods, cs.CoreV1().Pods("").List, func(l *corev1.PodList) []corev1.Pod { return l.Items }),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].Name != "node-1" || len(pods) != 1 || pods[0].Name != "p" {
		t.Errorf("listed nodes %v, pods %v; want node-1 and ns/p", nodes, pods)
	}

	boom := errors.New("boom")
	called := false
	err = All(ctx, metav1.ListOptions{}, []Kind{
		{"widgets", func(context.Context, metav1.ListOptions) error { return boom }},
		{"gadgets", func(context.Context, metav1.ListOptions) error { called = true; return nil }},
	})
	if !errors.Is(err, boom) || err.Error() != "listing widgets: boom" {
		t.Errorf("err = %v, want listing widgets: boom", err)
	}
	if called {
		t.Error("a kind after the failing one was listed")
	}
}
