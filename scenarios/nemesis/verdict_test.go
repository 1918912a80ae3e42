package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
)

func TestClassify(t *testing.T) {
	timeout := &scenarios.StepError{Step: 3, Name: "wait pvc/data", Err: errors.New("timed out")}
	broken := &scenarios.StepError{Step: 3, Name: "wait pvc/data", Err: errors.New("timed out"),
		Broken: []invariant.Violation{{Invariant: "rwo-single-node"}, {Invariant: "csi-call-order"}, {Invariant: "rwo-single-node"}}}
	timedFault := &scenarios.StepError{Step: 2, Name: "sleep 5s", Err: fmt.Errorf("sleep interrupted: %w",
		&scenarios.TimedFaultError{TimedFault: scenarios.TimedFault{Fault: fault.Fault{Kind: fault.NodeReturn, Node: "n"}}, Err: errors.New("not lost")})}
	atEnd := &scenarios.InvariantError{Result: &scenarios.InvariantResult{Unexpected: []invariant.Violation{{Invariant: "nothing-leaked"}}}}
	missing := &scenarios.InvariantError{Result: &scenarios.InvariantResult{Missing: []string{"pod-volumes-set-up"}}}
	tests := []struct {
		name         string
		err          error
		problems     []string
		want         string
		failed       bool // without --liveness
		failedStrict bool // with it
	}{
		{"pass", nil, nil, "pass", false, false},
		{"a step times out", timeout, nil, "liveness: step wait pvc/data", false, true},
		{"an invariant broke before the step failed", broken, nil, "safety: csi-call-order, rwo-single-node", true, true},
		{"an invariant broke at the end", atEnd, nil, "safety: nothing-leaked", true, true},
		{"an expected violation did not occur", missing, nil, "liveness: step expect", false, true},
		{"a timed fault could not be injected", timedFault, nil, "error: step sleep 5s", true, true},
		{"a driver died on its own", timeout, []string{"node plugin on n exited"}, "error: step wait pvc/data", true, true},
		{"a driver died, yet every step passed", nil, []string{"node plugin on n exited"}, "error: step ", true, true},
		{"the cluster could not be asked", errors.New("connection refused"), nil, "error: step ", true, true},
	}
	for _, tt := range tests {
		v := Classify(tt.err, tt.problems)
		if got := v.Signature(); got != tt.want {
			t.Errorf("%s: signature %q, want %q", tt.name, got, tt.want)
		}
		if v.Failed(false) != tt.failed || v.Failed(true) != tt.failedStrict {
			t.Errorf("%s: Failed(false)=%v Failed(true)=%v, want %v %v", tt.name, v.Failed(false), v.Failed(true), tt.failed, tt.failedStrict)
		}
	}
}

func TestWithChecksMakesAViolationSafety(t *testing.T) {
	always := invariant.Invariant{Name: "planted", Check: func(*invariant.History) []invariant.Violation {
		return []invariant.Violation{{Message: "found"}}
	}}
	v := withChecks(Verdict{Class: Liveness, Step: "wait x"}, []invariant.Invariant{always}, nil)
	if v.Signature() != "safety: planted" || v.Step != "wait x" {
		t.Errorf("verdict %+v, want safety: planted at wait x", v)
	}
	v = withChecks(Verdict{Class: Safety, Invariants: []string{"rwo-single-node"}}, []invariant.Invariant{always}, nil)
	if !slices.Equal(v.Invariants, []string{"planted", "rwo-single-node"}) {
		t.Errorf("invariants %v", v.Invariants)
	}
}
