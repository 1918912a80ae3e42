package realkube

import (
	"slices"
	"strings"
	"testing"

	"github.com/csisim/csisim/timing"
)

// TestTimingFlags: a scaled timing reaches kube-apiserver and
// kube-controller-manager as their flags and runs the timed controller
// manager; v1.37's timing adds no flag and runs the plain one.
func TestTimingFlags(t *testing.T) {
	for _, tc := range []struct {
		timing        timing.Timing
		apiserver     []string
		kcm           []string
		kcmBinary     string
		kcmAbsentFlag string
	}{
		{timing: timing.Timing{}, kcmBinary: KubeControllerManager, kcmAbsentFlag: "--node-monitor-grace-period"},
		{timing: timing.Timing{Speedup: 10}, kcmBinary: KubeControllerManagerTimed,
			apiserver: []string{"--default-not-ready-toleration-seconds=30", "--default-unreachable-toleration-seconds=30"},
			kcm:       []string{"--node-monitor-period=500ms", "--node-monitor-grace-period=5s"}},
	} {
		c := &Cluster{cfg: Config{Timing: tc.timing, ControllersFlag: "*"}, pki: &pki{}}
		api, kcm := c.apiserverArgs(), c.kcmArgs()
		for _, f := range tc.apiserver {
			if !slices.Contains(api, f) {
				t.Errorf("speedup %d: kube-apiserver lacks %s: %v", tc.timing.Speedup, f, api)
			}
		}
		for _, f := range tc.kcm {
			if !slices.Contains(kcm, f) {
				t.Errorf("speedup %d: kube-controller-manager lacks %s: %v", tc.timing.Speedup, f, kcm)
			}
		}
		if tc.kcmAbsentFlag != "" && slices.ContainsFunc(append(api, kcm...), func(a string) bool {
			return strings.Contains(a, "toleration-seconds") || strings.HasPrefix(a, tc.kcmAbsentFlag)
		}) {
			t.Errorf("v1.37's timing: flags %v %v", api, kcm)
		}
		if bins := c.cfg.Binaries(); !slices.Contains(bins, tc.kcmBinary) || len(bins) != len(ControlPlaneBinaries) {
			t.Errorf("speedup %d: binaries %v, want %s among four", tc.timing.Speedup, bins, tc.kcmBinary)
		}
	}
}
