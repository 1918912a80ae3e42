package timing

import (
	"slices"
	"testing"
	"time"
)

// TestDefaults: the zero value is v1.37's timing and asks the real
// components for no flag, so that a scenario without cluster.timing runs
// them as they come.
func TestDefaults(t *testing.T) {
	for _, tm := range []Timing{{}, {Speedup: 1}} {
		if tm.Scaled() || tm.NodeMonitorGracePeriod() != 50*time.Second || tm.NodeMonitorPeriod() != 5*time.Second ||
			tm.TolerationSeconds() != 300 || tm.MaxWaitForUnmount() != 6*time.Minute || tm.NodeStatusUpdateFrequency() != 10*time.Second ||
			tm.NodeLeaseDurationSeconds() != 40 || tm.NodeStatusReportFrequency() != 5*time.Minute {
			t.Errorf("%+v is not v1.37's timing", tm)
		}
		if a := append(tm.KubeAPIServerArgs(), tm.KubeControllerManagerArgs()...); len(a) != 0 {
			t.Errorf("%+v asks for flags %v", tm, a)
		}
	}
}

// TestSpeedup: every duration divided together, and the flags that carry
// them to the real components.
func TestSpeedup(t *testing.T) {
	tm := Timing{Speedup: 10}
	got := []any{tm.NodeMonitorPeriod(), tm.NodeMonitorGracePeriod(), tm.TolerationSeconds(), tm.MaxWaitForUnmount(),
		tm.NodeStatusUpdateFrequency(), tm.NodeLeaseDurationSeconds(), tm.NodeStatusReportFrequency()}
	want := []any{500 * time.Millisecond, 5 * time.Second, int64(30), 36 * time.Second, time.Second, int32(4), 30 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("speedup 10: %v, want %v", got, want)
	}
	if a, w := tm.KubeControllerManagerArgs(), []string{"--node-monitor-period=500ms", "--node-monitor-grace-period=5s"}; !slices.Equal(a, w) {
		t.Errorf("kube-controller-manager flags %v, want %v", a, w)
	}
	if a, w := tm.KubeAPIServerArgs(), []string{"--default-not-ready-toleration-seconds=30", "--default-unreachable-toleration-seconds=30"}; !slices.Equal(a, w) {
		t.Errorf("kube-apiserver flags %v, want %v", a, w)
	}
	if tm := (Timing{Speedup: MaxSpeedup}); tm.NodeLeaseDurationSeconds() != 2 || tm.TolerationSeconds() != 15 {
		t.Errorf("speedup %d: lease %d s, toleration %d s", MaxSpeedup, tm.NodeLeaseDurationSeconds(), tm.TolerationSeconds())
	}
}

func TestValidate(t *testing.T) {
	for s, ok := range map[int]bool{-1: false, 0: true, 1: true, 10: true, MaxSpeedup: true, MaxSpeedup + 1: false} {
		if err := (Timing{Speedup: s}).Validate(); (err == nil) != ok {
			t.Errorf("speedup %d: Validate() = %v", s, err)
		}
	}
}
