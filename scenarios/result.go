package scenarios

import "time"

// Outcome is how a step ended.
type Outcome string

const (
	Passed Outcome = "passed"
	Failed Outcome = "failed"
	// NotRun marks the steps after a failure, which the runner skips.
	NotRun Outcome = "not run"
	// Skipped marks a step the backend cannot run (with
	// Runner.SkipUnsupported), e.g. a CSI call check on a real cluster.
	Skipped Outcome = "skipped"
)

// Result is the record of one scenario run.
type Result struct {
	Scenario string
	File     string
	Steps    []StepResult
	// Vars holds the variables saved by the steps that ran.
	Vars     map[string]string
	Duration time.Duration
	// Invariants is what the invariant checker found after the steps; nil
	// when the backend keeps no history or a step failed.
	Invariants *InvariantResult
	// Fired are the Runner's timed faults that fired, in order, with
	// where in the steps.
	Fired []FiredFault
	// Skipped, if set, says why the scenario did not run: the driver
	// under test lacks what it needs ("needs snapshots: driver profile
	// mock lacks it"). Every step is then Skipped; the run neither passed
	// nor failed.
	Skipped string
	// Namespace is where the steps' namespaced objects went.
	Namespace string
}

// StepResult is the record of one step.
type StepResult struct {
	Step     int // 1-based
	Name     string
	Action   string
	Line     int
	Outcome  Outcome
	Duration time.Duration
	// Detail says what the step did or saw: "created StorageClass/fast",
	// "{.status.phase} == Bound", or the failure.
	Detail string
}

// Failed reports whether a step failed.
func (r *Result) Failed() bool {
	for _, s := range r.Steps {
		if s.Outcome == Failed {
			return true
		}
	}
	return false
}

// Passed reports whether every step passed; a skipped scenario has not.
func (r *Result) Passed() bool {
	if r.Skipped != "" {
		return false
	}
	for _, s := range r.Steps {
		if s.Outcome != Passed {
			return false
		}
	}
	return true
}
