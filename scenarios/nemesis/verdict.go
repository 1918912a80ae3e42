package nemesis

import (
	"errors"
	"slices"
	"strings"

	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// Class is what a run under the nemesis came to; see the package doc for
// which classes count as failures.
type Class string

const (
	// Pass: every step passed and every invariant held.
	Pass Class = "pass"
	// Liveness: a step did not pass (a wait timed out, an assert did not
	// hold, an expected violation did not occur) while every invariant
	// held so far: the faults may excuse it.
	Liveness Class = "liveness"
	// Safety: an invariant was violated.
	Safety Class = "safety"
	// Error: the run itself went wrong: a fault could not be injected, a
	// driver died on its own, the cluster could not be asked.
	Error Class = "error"
	// KnownUpstream: the only invariants violated were violated by a known
	// Kubernetes bug (invariant.Violation.KnownUpstream names it), not by
	// the driver: reported on every such run, never a failure (but with
	// --liveness, a step that failed meanwhile still fails the run).
	KnownUpstream Class = "known-upstream"
)

// Verdict is the classified outcome of one run.
type Verdict struct {
	Class Class
	// Invariants are the violated invariants' names (Safety), sorted.
	Invariants []string
	// Step names the step that failed, if one did.
	Step string
	// Crash says how the process running the scenario died (a panic's
	// message and where), when it did: an Error.
	Crash string
	// Message is the failure as the runner reported it; for a
	// KnownUpstream verdict, the KNOWN lines and, if a step failed, the
	// step's failure.
	Message string
	// Upstream are the known upstream bugs behind the violations of a
	// KnownUpstream verdict ("kubernetes#121937"), sorted; Known their
	// violations' KNOWN lines (invariant.Violation.KnownLine), in order.
	Upstream []string `json:",omitempty"`
	Known    []string `json:",omitempty"`
}

// Failed says whether the verdict counts as a failure; liveness counts
// only when asked to.
func (v Verdict) Failed(liveness bool) bool {
	return v.Class == Safety || v.Class == Error || (liveness && (v.Class == Liveness || (v.Class == KnownUpstream && v.Step != "")))
}

// Signature is what two runs must share to fail "in the same way", for the
// shrinker: the class and the invariants violated, or the step that
// failed. Messages are left out: their times and names vary with the
// schedule.
func (v Verdict) Signature() string {
	switch v.Class {
	case Safety:
		return "safety: " + strings.Join(v.Invariants, ", ")
	case Error:
		if v.Crash != "" {
			return "error: crash: " + v.Crash
		}
		return "error: step " + v.Step
	case Liveness:
		return "liveness: step " + v.Step
	case KnownUpstream:
		return "known-upstream: " + strings.Join(v.Upstream, ", ") + " (" + strings.Join(v.Invariants, ", ") + ")"
	}
	return string(v.Class)
}

// Classify turns a run's result and error (from scenarios.Runner.Run) and
// the backend's problems (drivers that died on their own) into a verdict.
// Violations a known upstream bug caused fail nothing: a run that has them
// and no other violation, error or problem is KnownUpstream, whether a step
// failed meanwhile or not (without them, that step's failure would have
// been Liveness). entries are the timeline, to quote in the KNOWN lines.
func Classify(res *scenarios.Result, runErr error, problems []string, entries []trace.Entry) Verdict {
	v := classifyErr(runErr, problems)
	var known []invariant.Violation
	var stepErr *scenarios.StepError
	var invErr *scenarios.InvariantError
	switch {
	case errors.As(runErr, &stepErr):
		known = stepErr.KnownUpstream
	case errors.As(runErr, &invErr):
		known = invErr.Result.KnownUpstream
	case runErr == nil && res != nil && res.Invariants != nil:
		known = res.Invariants.KnownUpstream
	}
	if len(known) == 0 {
		return v
	}
	// Whatever the verdict, it names them: a failure for another reason
	// still shows what the known bug did.
	var invariants []string
	for _, kv := range known {
		invariants = append(invariants, kv.Invariant)
		v.Upstream = append(v.Upstream, kv.KnownUpstream)
		v.Known = append(v.Known, kv.KnownLine())
	}
	v.Upstream = uniqueSorted(v.Upstream)
	switch v.Class {
	case Error:
		v.Message += "\n" + scenarios.KnownReport(known, entries)
		return v
	case Safety: // its message (the step's, the invariants') has the KNOWN lines
		return v
	}
	k := Verdict{Class: KnownUpstream, Step: v.Step, Message: scenarios.KnownReport(known, entries),
		Invariants: uniqueSorted(invariants), Upstream: v.Upstream, Known: v.Known}
	if v.Class == Liveness {
		// The step's own message names the KNOWN lines again.
		var lines []string
		for _, l := range strings.Split(v.Message, "\n") {
			if !strings.HasPrefix(l, "  meanwhile: KNOWN  ") {
				lines = append(lines, l)
			}
		}
		k.Message += "\nmeanwhile a step failed: " + strings.Join(lines, "\n")
	}
	return k
}

// classifyErr is Classify leaving known upstream violations out.
func classifyErr(runErr error, problems []string) Verdict {
	var (
		stepErr  *scenarios.StepError
		invErr   *scenarios.InvariantError
		timedErr *scenarios.TimedFaultError
	)
	switch {
	case errors.As(runErr, &invErr) && len(invErr.Result.Unexpected) > 0:
		v := Verdict{Class: Safety, Message: invErr.Error()}
		for _, iv := range invErr.Result.Unexpected {
			v.Invariants = append(v.Invariants, iv.Invariant)
		}
		v.Invariants = uniqueSorted(v.Invariants)
		return v
	case errors.As(runErr, &stepErr) && len(stepErr.Broken) > 0:
		v := Verdict{Class: Safety, Step: stepErr.Name, Message: stepErr.Error()}
		for _, iv := range stepErr.Broken {
			v.Invariants = append(v.Invariants, iv.Invariant)
		}
		v.Invariants = uniqueSorted(v.Invariants)
		return v
	case len(problems) > 0:
		v := Verdict{Class: Error, Message: strings.Join(problems, "\n")}
		if stepErr != nil {
			v.Step = stepErr.Name
		}
		return v
	case errors.As(runErr, &timedErr):
		v := Verdict{Class: Error, Message: runErr.Error()}
		if stepErr != nil {
			v.Step = stepErr.Name
		}
		return v
	case stepErr != nil:
		return Verdict{Class: Liveness, Step: stepErr.Name, Message: stepErr.Error()}
	case invErr != nil:
		// Only expected violations that did not occur: the faults kept
		// the scenario from reproducing its bug.
		return Verdict{Class: Liveness, Step: "expect", Message: invErr.Error()}
	case runErr != nil:
		return Verdict{Class: Error, Message: runErr.Error()}
	}
	return Verdict{Class: Pass}
}

// uniqueSorted is names sorted, each once.
func uniqueSorted(names []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(names)))
}
