package kubelet

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// A node that comes back posts all four of the real kubelet's conditions
// healthy again; what did not change keeps its transition time.
func TestPostReadyRestoresConditions(t *testing.T) {
	lost := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	unknown := func(typ corev1.NodeConditionType) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status.", LastTransitionTime: lost}
	}
	tests := []struct {
		name        string
		conditions  []corev1.NodeCondition
		sinceReport time.Duration // since the kubelet last posted its status; 0: never
		wantUpdate  bool
		wantReasons []string
	}{
		{
			name: "all Unknown after a loss",
			conditions: []corev1.NodeCondition{unknown(corev1.NodeMemoryPressure), unknown(corev1.NodeDiskPressure),
				unknown(corev1.NodePIDPressure), unknown(corev1.NodeReady)},
			sinceReport: 10 * time.Minute,
			wantUpdate:  true,
			wantReasons: []string{"KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID", "KubeletReady"},
		},
		{
			name:        "healthy already, reported a minute ago: no write",
			conditions:  healthyConditions(lost),
			sinceReport: time.Minute,
			wantReasons: []string{"KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID", "KubeletReady"},
		},
		{
			name:        "healthy, unreported for five minutes: posted again",
			conditions:  healthyConditions(lost),
			sinceReport: NodeStatusReportFrequency,
			wantUpdate:  true,
			wantReasons: []string{"KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID", "KubeletReady"},
		},
		{
			name:        "healthy, never reported by this kubelet (restarted): posted",
			conditions:  healthyConditions(lost),
			wantUpdate:  true,
			wantReasons: []string{"KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID", "KubeletReady"},
		},
		{
			name:        "only Ready was ever posted",
			conditions:  []corev1.NodeCondition{unknown(corev1.NodeReady)},
			sinceReport: time.Minute,
			wantUpdate:  true,
			wantReasons: []string{"KubeletReady", "KubeletHasSufficientMemory", "KubeletHasNoDiskPressure", "KubeletHasSufficientPID"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Conditions: tt.conditions}}
			cs := fake.NewClientset(node)
			now := lost.Add(10 * time.Minute)
			k := &Kubelet{cfg: Config{NodeName: "node-1"}, client: cs, clock: testingclock.NewFakeClock(now)}
			if tt.sinceReport > 0 {
				k.lastStatusReport = now.Add(-tt.sinceReport)
			}
			if err := k.postReady(context.Background()); err != nil {
				t.Fatal(err)
			}
			updates := 0
			for _, a := range cs.Actions() {
				if a.GetVerb() == "update" {
					updates++
				}
			}
			if got := updates > 0; got != tt.wantUpdate {
				t.Errorf("status written = %v, want %v", got, tt.wantUpdate)
			}
			got, _ := cs.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
			var reasons []string
			for _, c := range got.Status.Conditions {
				reasons = append(reasons, c.Reason)
				wantStatus := corev1.ConditionFalse
				if c.Type == corev1.NodeReady {
					wantStatus = corev1.ConditionTrue
				}
				if c.Status != wantStatus {
					t.Errorf("%s = %s, want %s", c.Type, c.Status, wantStatus)
				}
				if tt.wantUpdate && !c.LastHeartbeatTime.Time.Equal(now) {
					t.Errorf("%s heartbeat time %v, want %v", c.Type, c.LastHeartbeatTime, now)
				}
			}
			if len(reasons) != len(tt.wantReasons) {
				t.Fatalf("reasons %v, want %v", reasons, tt.wantReasons)
			}
			for i := range reasons {
				if reasons[i] != tt.wantReasons[i] {
					t.Errorf("reasons %v, want %v", reasons, tt.wantReasons)
					break
				}
			}
		})
	}
}
