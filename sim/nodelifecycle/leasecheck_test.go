package nodelifecycle

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLeaseCircuitBreaker: a node whose Lease in the informer is past the
// grace period is marked Unknown only when the API server's Lease is the
// same version; a newer one there (the informer is behind) skips the node,
// as v1.37's controller does.
func TestLeaseCircuitBreaker(t *testing.T) {
	for _, tc := range []struct {
		name               string
		informerRV, liveRV string
		wantReady          corev1.ConditionStatus
	}{
		{"informer up to date", "9", "9", corev1.ConditionUnknown},
		{"informer behind", "5", "9", corev1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, client, factory, clk := newTestController()
			ctx := context.Background()
			old := metav1.NewMicroTime(clk.Now())
			clk.Step(2 * GracePeriod)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a",
				Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "0"}},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					LastHeartbeatTime: metav1.NewTime(old.Time)}}}}
			lease := func(rv string, renewed metav1.MicroTime) *coordinationv1.Lease {
				return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: corev1.NamespaceNodeLease, ResourceVersion: rv},
					Spec: coordinationv1.LeaseSpec{RenewTime: &renewed}}
			}
			if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(node); err != nil {
				t.Fatal(err)
			}
			if err := factory.Coordination().V1().Leases().Informer().GetIndexer().Add(lease(tc.informerRV, old)); err != nil {
				t.Fatal(err)
			}
			live := lease(tc.liveRV, metav1.NewMicroTime(clk.Now().Add(-time.Second)))
			if tc.liveRV == tc.informerRV {
				live.Spec.RenewTime = &old
			}
			if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, live, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := c.syncNode(ctx, "node-a"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ready(got) != tc.wantReady {
				t.Errorf("Ready %s, want %s", ready(got), tc.wantReady)
			}
		})
	}
}
