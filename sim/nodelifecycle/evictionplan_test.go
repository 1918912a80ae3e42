package nodelifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPlannedEvictionsAreCancelled: a pod that tolerates its node's
// unreachable taint for 300 s has its eviction planned; deleted by someone
// else first, or its node's taint gone, the plan is cancelled with the real
// controller's event; a plan carried out is not cancelled afterwards.
func TestPlannedEvictionsAreCancelled(t *testing.T) {
	seconds := int64(300)
	for _, tc := range []struct {
		name   string
		wait   bool // past the toleration: the eviction is carried out
		end    func(c *Controller, node *corev1.Node, pod *corev1.Pod)
		events string
	}{
		{"the pod is deleted first", false, func(c *Controller, _ *corev1.Node, pod *corev1.Pod) {
			c.podDeleted(pod)
			key, _ := c.queue.Get()
			_ = c.syncNode(context.Background(), key)
		}, "Cancelling deletion of Pod default/app-0"},
		{"the taint goes", false, func(c *Controller, node *corev1.Node, _ *corev1.Pod) {
			node.Spec.Taints = nil
			_ = c.evict(context.Background(), node)
		}, "Cancelling deletion of Pod default/app-0"},
		{"deleted after the eviction", true, func(c *Controller, _ *corev1.Node, pod *corev1.Pod) {
			c.podDeleted(pod)
			if c.queue.Len() != 0 {
				t.Error("a carried-out eviction was queued for cancelling")
			}
		}, "Marking for deletion Pod default/app-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client, factory, clk := newTestController()
			ctx := context.Background()
			now := metav1.NewTime(clk.Now())
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
				{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}}}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-0", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-a",
				Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}}}}
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_ = factory.Core().V1().Pods().Informer().GetIndexer().Add(pod)
			if err := c.evict(ctx, node); err != nil {
				t.Fatal(err)
			}
			if tc.wait {
				clk.Step(301e9)
				if err := c.evict(ctx, node); err != nil {
					t.Fatal(err)
				}
			}
			tc.end(c, node, pod)
			list, _ := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
			var got []string
			for _, e := range list.Items {
				got = append(got, e.Message)
			}
			if strings.Join(got, "; ") != tc.events {
				t.Errorf("events %q, want %q", got, tc.events)
			}
		})
	}
}
