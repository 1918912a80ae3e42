package kubelet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/timing"
)

// TestHeartbeatFollowsTiming: a cluster whose node-loss timing is sped up
// ten times has kubelets that renew every second a Lease of 4 s, and post
// an unchanged status every 30 s.
func TestHeartbeatFollowsTiming(t *testing.T) {
	for _, tc := range []struct {
		timing          timing.Timing
		every           time.Duration
		lease           int32
		reportedAgo     time.Duration
		wantStatusWrite bool
	}{
		{timing.Timing{}, 10 * time.Second, 40, 30 * time.Second, false},
		{timing.Timing{Speedup: 10}, time.Second, 4, 30 * time.Second, true},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-1"},
			Status: corev1.NodeStatus{Conditions: healthyConditions(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))}}
		cs := fake.NewClientset(node)
		now := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
		k := &Kubelet{cfg: Config{NodeName: "node-1", Timing: tc.timing}, client: cs, clock: testingclock.NewFakeClock(now),
			lastStatusReport: now.Add(-tc.reportedAgo)}
		if got := k.Component().Periodic[0].Every; got != tc.every {
			t.Errorf("speedup %d: heartbeat every %s, want %s", tc.timing.Speedup, got, tc.every)
		}
		if err := k.renewLease(context.Background()); err != nil {
			t.Fatal(err)
		}
		lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *lease.Spec.LeaseDurationSeconds != tc.lease {
			t.Errorf("speedup %d: lease of %d s, want %d", tc.timing.Speedup, *lease.Spec.LeaseDurationSeconds, tc.lease)
		}
		if err := k.postReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		wrote := false
		for _, a := range cs.Actions() {
			wrote = wrote || a.GetVerb() == "update" && a.GetResource().Resource == "nodes"
		}
		if wrote != tc.wantStatusWrite {
			t.Errorf("speedup %d: status unchanged for %s posted: %v, want %v", tc.timing.Speedup, tc.reportedAgo, wrote, tc.wantStatusWrite)
		}
	}
}
