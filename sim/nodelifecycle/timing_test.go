package nodelifecycle

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/timing"
)

// TestGracePeriodFollowsTiming: a node whose Lease was last renewed 6 s
// ago is within v1.37's 50 s grace period, and past the 5 s of a cluster
// whose timing is sped up ten times.
func TestGracePeriodFollowsTiming(t *testing.T) {
	for _, tc := range []struct {
		timing    timing.Timing
		wantReady corev1.ConditionStatus
	}{
		{timing.Timing{}, corev1.ConditionTrue},
		{timing.Timing{Speedup: 10}, corev1.ConditionUnknown},
	} {
		t.Run(string(tc.wantReady), func(t *testing.T) {
			c, client, factory, clk := newTestController()
			c.SetTiming(tc.timing)
			ctx := context.Background()
			renewed := metav1.NewMicroTime(clk.Now())
			clk.Step(6 * time.Second)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a",
				Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "0"}},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					LastHeartbeatTime: metav1.NewTime(renewed.Time)}}}}
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: corev1.NamespaceNodeLease, ResourceVersion: "7"},
				Spec: coordinationv1.LeaseSpec{RenewTime: &renewed}}
			if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(node); err != nil {
				t.Fatal(err)
			}
			if err := factory.Coordination().V1().Leases().Informer().GetIndexer().Add(lease); err != nil {
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
				t.Errorf("Ready %s 6 s after the last heartbeat, grace period %s; want %s", ready(got), tc.timing.NodeMonitorGracePeriod(), tc.wantReady)
			}
		})
	}
}
