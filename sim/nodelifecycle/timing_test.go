package nodelifecycle

import (
	"testing"
	"time"

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
			renewed := metav1.NewMicroTime(clk.Now())
			clk.Step(6 * time.Second)
			lease := nodeLease("7", renewed)
			if got := syncedReady(t, c, client, factory, readyNode(renewed.Time), lease, lease); got != tc.wantReady {
				t.Errorf("Ready %s 6 s after the last heartbeat, grace period %s; want %s", got, tc.timing.NodeMonitorGracePeriod(), tc.wantReady)
			}
		})
	}
}
