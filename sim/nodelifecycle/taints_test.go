package nodelifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node is tainted unreachable in two writes, NoSchedule and then
// NoExecute, as the real controller's two passes write them; removing them
// is one write. Other taints stay.
func TestUnreachableTaintsWrites(t *testing.T) {
	outOfService := corev1.Taint{Key: "node.kubernetes.io/out-of-service", Effect: corev1.TaintEffectNoExecute}
	noSchedule := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name   string
		taints []corev1.Taint
		add    bool
		// writes are the node's taints after each write, as key:effect.
		writes []string
	}{
		{name: "tainted", add: true, writes: []string{
			"node.kubernetes.io/unreachable:NoSchedule",
			"node.kubernetes.io/unreachable:NoSchedule, node.kubernetes.io/unreachable:NoExecute"}},
		{name: "tainted beside another taint", taints: []corev1.Taint{outOfService}, add: true, writes: []string{
			"node.kubernetes.io/out-of-service:NoExecute, node.kubernetes.io/unreachable:NoSchedule",
			"node.kubernetes.io/out-of-service:NoExecute, node.kubernetes.io/unreachable:NoSchedule, node.kubernetes.io/unreachable:NoExecute"}},
		{name: "untainted", taints: []corev1.Taint{noSchedule, outOfService, noExecute}, writes: []string{
			"node.kubernetes.io/out-of-service:NoExecute"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, client, _, _ := newTestController()
			ctx := context.Background()
			node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
				Spec: corev1.NodeSpec{Taints: tc.taints}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			if err := c.setUnreachableTaints(ctx, node, tc.add); err != nil {
				t.Fatal(err)
			}
			writes, _ := nodeWrites(client)
			if !slices.Equal(writes, tc.writes) {
				t.Errorf("writes\n  %s\nwant\n  %s", strings.Join(writes, "\n  "), strings.Join(tc.writes, "\n  "))
			}
		})
	}
}
