package scenarios

import (
	"fmt"
	"strings"

	"github.com/csisim/csisim/invariant"
)

// ParseError is one problem found in a scenario file or in a manifest it
// refers to. It prints as "file:line: step N (action): problem".
type ParseError struct {
	File   string
	Line   int
	Step   int    // 1-based; 0 when the problem is outside the steps
	Action string // the step's action, when known
	Msg    string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	if e.Step > 0 {
		fmt.Fprintf(&b, "step %d", e.Step)
		if e.Action != "" {
			fmt.Fprintf(&b, " (%s)", e.Action)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ParseErrors is every problem found in one scenario, in the order found.
// Parsing goes on after a bad step so that one run shows all the mistakes.
type ParseErrors []*ParseError

func (es ParseErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *ParseError values.
func (es ParseErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// StepError is why a scenario run stopped: a step failed.
type StepError struct {
	Step   int // 1-based
	Name   string
	Action string
	File   string
	Line   int
	// Expected and Observed describe a condition that did not hold; both
	// are empty when the step failed for another reason (an API error).
	Expected string
	Observed string
	Err      error
	// Problems are what the backend saw go wrong outside the scenario's
	// control by the time the step failed (see ProblemSource), often the
	// cause: "node plugin on node-1 exited with status 3 (pid 4242)", and
	// the invariants broken so far ("INVARIANT ... violated: ...").
	Problems []string
	// Broken are the invariant violations the history showed by then
	// (all but nothing-leaked and no-leaked-volume, which judge the end) that the scenario
	// does not expect; Problems names them too.
	Broken []invariant.Violation
	// KnownUpstream are the violations by then that a known Kubernetes
	// bug caused (not in Broken); Problems names them too, as "KNOWN
	// kubernetes#...: INVARIANT ... violated: ...".
	KnownUpstream []invariant.Violation
}

func (e *StepError) Error() string {
	msg := fmt.Sprintf("step %d %q at %s:%d: %v", e.Step, e.Name, e.File, e.Line, e.Err)
	for _, p := range e.Problems {
		msg += "\n  meanwhile: " + p
	}
	return msg
}

// ProblemSource is implemented by backends that notice trouble no step
// asked for, such as a CSI driver process that died on its own (the
// simulator). The runner adds them to a failed step's error.
type ProblemSource interface {
	Problems() []string
}

func (e *StepError) Unwrap() error { return e.Err }

// conditionError is a check that did not hold; the runner copies its
// expected and observed values into the StepError.
type conditionError struct {
	expected string
	observed string
	msg      string
}

func (e *conditionError) Error() string { return e.msg }
