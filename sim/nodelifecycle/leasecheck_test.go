package nodelifecycle

import (
	"testing"
	"time"

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
			old := metav1.NewMicroTime(clk.Now())
			clk.Step(2 * GracePeriod)
			live := nodeLease(tc.liveRV, metav1.NewMicroTime(clk.Now().Add(-time.Second)))
			if tc.liveRV == tc.informerRV {
				live.Spec.RenewTime = &old
			}
			if got := syncedReady(t, c, client, factory, readyNode(old.Time), nodeLease(tc.informerRV, old), live); got != tc.wantReady {
				t.Errorf("Ready %s, want %s", got, tc.wantReady)
			}
		})
	}
}
