package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
		v := Classify(nil, tt.err, tt.problems, nil)
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

// A violation a known Kubernetes bug caused (KnownUpstream) is a verdict
// of its own, never a failure alone; any other violation beside it still
// fails the run, and so do errors.
func TestClassifyKnownUpstream(t *testing.T) {
	known := invariant.Violation{Invariant: "csi-call-order", Message: "DeleteVolumeWhileInUse: ...", KnownUpstream: "kubernetes#121937"}
	leak := invariant.Violation{Invariant: "nothing-leaked", Message: "left", KnownUpstream: "kubernetes#121937"}
	ordinary := invariant.Violation{Invariant: "rwo-single-node", Message: "two nodes"}
	passed := &scenarios.Result{Invariants: &scenarios.InvariantResult{KnownUpstream: []invariant.Violation{known}}}
	stepKnown := &scenarios.StepError{Step: 16, Name: "assert csiCalls", Err: errors.New("not exactly"), KnownUpstream: []invariant.Violation{known}}
	stepMixed := &scenarios.StepError{Step: 16, Name: "assert csiCalls", Err: errors.New("not exactly"),
		Broken: []invariant.Violation{ordinary}, KnownUpstream: []invariant.Violation{known}}
	endKnown := &scenarios.InvariantError{Result: &scenarios.InvariantResult{KnownUpstream: []invariant.Violation{known, leak}, Missing: []string{"pod-volumes-set-up"}}}
	endMixed := &scenarios.InvariantError{Result: &scenarios.InvariantResult{Unexpected: []invariant.Violation{ordinary}, KnownUpstream: []invariant.Violation{known}}}
	tests := []struct {
		name         string
		res          *scenarios.Result
		err          error
		problems     []string
		want         string
		failed       bool // without --liveness
		failedStrict bool // with it
	}{
		{"only known-upstream, every step passed", passed, nil, nil, "known-upstream: kubernetes#121937 (csi-call-order)", false, false},
		{"only known-upstream, a step failed", nil, stepKnown, nil, "known-upstream: kubernetes#121937 (csi-call-order)", false, true},
		{"known-upstream and an ordinary violation before a step failed", nil, stepMixed, nil, "safety: rwo-single-node", true, true},
		{"only known-upstream at the end, an expected one missing", nil, endKnown, nil, "known-upstream: kubernetes#121937 (csi-call-order, nothing-leaked)", false, true},
		{"known-upstream and an ordinary violation at the end", nil, endMixed, nil, "safety: rwo-single-node", true, true},
		{"known-upstream and a driver that died", nil, stepKnown, []string{"node plugin on n exited"}, "error: step assert csiCalls", true, true},
	}
	for _, tt := range tests {
		v := Classify(tt.res, tt.err, tt.problems, nil)
		if got := v.Signature(); got != tt.want {
			t.Errorf("%s: signature %q, want %q", tt.name, got, tt.want)
		}
		if v.Failed(false) != tt.failed || v.Failed(true) != tt.failedStrict {
			t.Errorf("%s: Failed(false)=%v Failed(true)=%v, want %v %v", tt.name, v.Failed(false), v.Failed(true), tt.failed, tt.failedStrict)
		}
		if v.Class == KnownUpstream && (len(v.Known) == 0 || !strings.HasPrefix(v.Known[0], "KNOWN  kubernetes#121937: INVARIANT csi-call-order violated: ") ||
			!strings.Contains(v.Message, v.Known[0])) {
			t.Errorf("%s: known lines %q, message %q, want the KNOWN line in both", tt.name, v.Known, v.Message)
		}
	}
}

// A verdict that fails for another reason still names the known bug's
// violations, for the JSON result and the report.
func TestAFailingVerdictNamesTheKnownUpstreamViolations(t *testing.T) {
	known := invariant.Violation{Invariant: "csi-call-order", Message: "m", KnownUpstream: "kubernetes#121937"}
	step := &scenarios.StepError{Step: 2, Name: "wait", Err: errors.New("timed out"), KnownUpstream: []invariant.Violation{known}}
	for _, v := range []Verdict{Classify(nil, step, []string{"node plugin on n exited"}, nil),
		Classify(nil, &scenarios.StepError{Step: 2, Name: "wait", Err: errors.New("x"), Broken: []invariant.Violation{{Invariant: "rwo-single-node"}},
			KnownUpstream: []invariant.Violation{known}}, nil, nil)} {
		if len(v.Known) != 1 || !slices.Equal(v.Upstream, []string{"kubernetes#121937"}) {
			t.Errorf("%s: Known %q, Upstream %q; want the known violation", v.Signature(), v.Known, v.Upstream)
		}
		if v.Class == Error && !strings.Contains(v.Message, "KNOWN  kubernetes#121937: INVARIANT csi-call-order violated: m") {
			t.Errorf("%s: message %q lacks the KNOWN line", v.Signature(), v.Message)
		}
	}
}
