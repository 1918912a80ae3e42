package diff

import (
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/scenarios"
)

func TestWriteTable(t *testing.T) {
	s := func(v string) *string { return &v }
	passed := RunResult{Passed: true, Steps: 3, Total: 3, Duration: 300 * time.Millisecond}
	why := &scenarios.Explanation{Line: 12, Object: "Node", Field: s("managers"), Why: "the real kubelet writes its status with its own name"}
	reports := []*Report{
		{Scenario: "agrees", Sim: passed, Real: RunResult{Passed: true, Steps: 3, Total: 3, Duration: 20 * time.Second},
			Differences: []Difference{
				{Object: "PersistentVolumeClaim default/data", Field: "managers", Sim: s(""), Real: s("kube-controller-manager Update")},
				{Object: "Node node-1", Field: "managers", Sim: s(""), Real: s("kubelet:node-1 Update"), Explanation: why},
				{Object: "Node node-2", Field: "managers", Sim: s(""), Real: s("kubelet:node-2 Update"), Explanation: why},
				{Object: "Pod default/app", Field: "event FailedMount count", Sim: s("2"), Real: s("3"), Timing: true},
			}},
		{Scenario: "differs", Speedup: 10, RealNodes: []string{"node-1"}, Sim: passed, Real: RunResult{Steps: 2, Total: 3, Duration: 61 * time.Second},
			Differences: []Difference{
				{Object: "step", Field: "outcome", Sim: s("passed"), Real: s("failed"), Wrong: "real"},
				{Object: "Pod default/app", Field: "event Scheduled source", Sim: s("default-scheduler"), Real: s("kubelet")},
			},
			Stale: []scenarios.Explanation{{Line: 3, Object: "Pod"}}},
		{Scenario: "stopped", Sim: passed, Real: RunResult{Steps: 1, Total: 3, Error: "the cluster did not start"}},
	}
	var b strings.Builder
	if err := WriteTable(&b, reports, Missing{Scenario: "two-drivers", Why: "runs CSI drivers beside the one under test"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| scenario | simulator | real | behaviour | bookkeeping | timing | unexplained | stale | wall (sim / real) |",
		"| `agrees` | passed 3/3 | passed 3/3 | 0 | 3 | 1 | 1 | 0 | 300ms / 20s |",
		"| `differs` (real nodes) (speedup 10) | passed 3/3 | failed step 2/3 | 2 | 0 | 0 | 2 | 1 | 300ms / 1m1s |",
		"| `stopped` | passed 3/3 | stopped at 1/3 | 0 | 0 | 0 | 0 | 0 | 300ms / 0s |",
		"| `two-drivers` | no report | no report | | | | | | runs CSI drivers beside the one under test |",
		"1 of 4 scenarios agree in behaviour but for the bookkeeping; 3 differences unexplained; 1 scenarios without a report.",
		"- `agrees`:\n  - **unexplained**: `after step 0 (): PersistentVolumeClaim default/data: managers: sim \"\", real \"kube-controller-manager Update\"`\n" +
			"  - 2 explained by line 12 (`Node: managers`): the real kubelet writes its status with its own name\n",
		"- `differs` (real nodes) (speedup 10):\n  - **unexplained**: `after step 0 (): step: outcome:",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
