package diff

import (
	"strings"
	"testing"
	"time"
)

func TestWriteTable(t *testing.T) {
	s := func(v string) *string { return &v }
	passed := RunResult{Passed: true, Steps: 3, Total: 3, Duration: 300 * time.Millisecond}
	reports := []*Report{
		{Scenario: "agrees", Sim: passed, Real: RunResult{Passed: true, Steps: 3, Total: 3, Duration: 20 * time.Second},
			Differences: []Difference{
				{Object: "PersistentVolumeClaim default/data", Field: "managers", Sim: s(""), Real: s("kube-controller-manager Update")},
				{Object: "Node node-1", Field: "managers", Sim: s(""), Real: s("kubelet:node-1 Update")},
				{Object: "Pod default/app", Field: "event FailedMount count", Sim: s("2"), Real: s("3"), Timing: true},
			}},
		{Scenario: "differs", Sim: passed, Real: RunResult{Steps: 2, Total: 3, Duration: 61 * time.Second},
			Differences: []Difference{
				{Object: "step", Field: "outcome", Sim: s("passed"), Real: s("failed"), Wrong: "real"},
				{Object: "Pod default/app", Field: "event Scheduled source", Sim: s("default-scheduler"), Real: s("kubelet")},
			}},
		{Scenario: "stopped", Sim: passed, Real: RunResult{Steps: 1, Total: 3, Error: "the cluster did not start"}},
	}
	var b strings.Builder
	if err := WriteTable(&b, reports); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `agrees` | passed 3/3 | passed 3/3 | 0 | 2 | 1 | 300ms / 20s |",
		"| `differs` | passed 3/3 | failed step 2/3 | 2 | 0 | 0 | 300ms / 1m1s |",
		"| `stopped` | passed 3/3 | stopped at 1/3 | 0 | 0 | 0 | 300ms / 0s |",
		"1 of 3 scenarios agree in behaviour but for the bookkeeping.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
