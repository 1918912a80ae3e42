package nodelifecycle

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNoScheduleTaints: the no-schedule pass takes off the not-ready taint
// a new Node is created with once it is Ready (or has never reported), puts
// it on while Ready is False, and keeps the unschedulable taint in step
// with a cordon; adding and removing are a write each, other taints stay.
func TestNoScheduleTaints(t *testing.T) {
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	unschedulable := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	readyIs := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}
	}
	tests := []struct {
		name        string
		taints      []corev1.Taint
		conditions  []corev1.NodeCondition
		cordoned    bool
		writes      []string // the node's taints after each write, as key:effect
		timeAddedAt int      // the write whose last taint must carry the time it was added, from 1; 0 for none
	}{
		{"a new node, Ready", []corev1.Taint{dedicated, notReady}, readyIs(corev1.ConditionTrue), false,
			[]string{"dedicated:NoSchedule"}, 0},
		{"a new node that never reported", []corev1.Taint{notReady}, nil, false, []string{""}, 0},
		{"a node not ready", nil, readyIs(corev1.ConditionFalse), false,
			[]string{"node.kubernetes.io/not-ready:NoSchedule"}, 1},
		{"a node not ready, tainted so", []corev1.Taint{notReady}, readyIs(corev1.ConditionFalse), false, nil, 0},
		{"a new node cordoned", []corev1.Taint{notReady}, readyIs(corev1.ConditionTrue), true,
			[]string{"node.kubernetes.io/not-ready:NoSchedule, node.kubernetes.io/unschedulable:NoSchedule",
				"node.kubernetes.io/unschedulable:NoSchedule"}, 1},
		{"a node uncordoned", []corev1.Taint{unschedulable, dedicated}, readyIs(corev1.ConditionTrue), false,
			[]string{"dedicated:NoSchedule"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, client, _, _ := newTestController()
			ctx := context.Background()
			node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
				Spec:   corev1.NodeSpec{Taints: tc.taints, Unschedulable: tc.cordoned},
				Status: corev1.NodeStatus{Conditions: tc.conditions}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			client.ClearActions()
			wrote, err := c.taintNoSchedule(ctx, node)
			if err != nil {
				t.Fatal(err)
			}
			writes, nodes := nodeWrites(client)
			if i := tc.timeAddedAt; i > 0 && i <= len(nodes) {
				if taints := nodes[i-1].Spec.Taints; taints[len(taints)-1].TimeAdded == nil {
					t.Errorf("write %d: the added taint has no timeAdded", i)
				}
			}
			if !slices.Equal(writes, tc.writes) {
				t.Errorf("writes\n  %q\nwant\n  %q", writes, tc.writes)
			}
			if wrote != (len(tc.writes) > 0) {
				t.Errorf("reported a write: %t, want %t", wrote, len(tc.writes) > 0)
			}
		})
	}
}
