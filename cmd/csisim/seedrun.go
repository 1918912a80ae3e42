package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
	"github.com/csisim/csisim/trace"
)

// seedPlaceholder in the file names of --trace and --driver-log stands for
// the seed, so that each seed of a sweep writes files of its own.
const seedPlaceholder = "{seed}"

// simRun is how to run one scenario on the simulator, for any seed: what
// `csisim run` was told, but the seed. Each run starts a cluster of its
// own from it — its own API server, loop, virtual clock, temporary root
// and driver processes. A single `csisim run` is one call of runSeed, and
// so is each seed of a sweep, in a child process (childRun). Whatever
// changes how a run goes (faults injected from outside, say) plugs in
// here, and reaches the seeds of a sweep through the flags they are run
// with (seedFlags).
type simRun struct {
	file      string           // the scenario file, loaded afresh by every run
	cluster   cluster.Config   // Seed and OnEntry are set per run
	traceFile string           // if set, where to write the timeline; may contain {seed}
	driverLog string           // if set, where the drivers' output goes; may contain {seed}
	profile   *profile.Profile // the driver under test; nil for csisim's own
	notices   io.Writer        // if set, hears what of a deployment (cluster.Deploy) the cluster did not apply
}

// runSeed runs the scenario on a cluster of its own with the given seed,
// and tears the cluster down, also when ctx ends first. The seed alone
// orders the cluster's work.
func (r simRun) runSeed(ctx context.Context, seed uint64) runOutcome {
	sc, err := scenarios.Load(r.file)
	if err != nil {
		return runOutcome{seed: seed, startErr: err}
	}
	cfg := r.cluster
	cfg.Seed = seed
	// Nothing a run is given is shared with another run.
	cfg.Nodes, cfg.DriverArgs = slices.Clone(cfg.Nodes), slices.Clone(cfg.DriverArgs)
	cfg.Driver.Args = slices.Clone(cfg.Driver.Args)
	if r.driverLog != "" {
		f, err := os.Create(withSeed(r.driverLog, seed))
		if err != nil {
			return runOutcome{seed: seed, startErr: fmt.Errorf("--driver-log: %w", err)}
		}
		defer f.Close()
		cfg.DriverLog = f
	}
	starting := time.Now()
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		return runOutcome{seed: seed, startErr: &startError{what: "the simulated cluster", err: err}, wall: time.Since(starting),
			interrupted: ctx.Err() != nil}
	}
	if r.notices != nil {
		clusterprofile.ReportNotApplied(c, r.notices)
	}
	out := runOn(ctx, c, c.Clock(), sc, r.profile, withSeed(r.traceFile, seed))
	out.seed = seed
	return out
}

// startError is a cluster that did not start; the start tore down what it
// had made, and whether all of it went is in err (a *runroot.LeftBehind).
type startError struct {
	what string // "the simulated cluster"
	err  error
}

func (e *startError) Error() string { return "starting " + e.what + ": " + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// withSeed puts the seed into a file name given with {seed}.
func withSeed(name string, seed uint64) string {
	return strings.ReplaceAll(name, seedPlaceholder, strconv.FormatUint(seed, 10))
}

// runOutcome is what one run of a scenario came to, before anything is
// printed about it.
type runOutcome struct {
	seed        uint64
	result      *scenarios.Result // nil if the run never started
	runErr      error             // from the runner: a *scenarios.StepError, *scenarios.InvariantError or other
	startErr    error             // the cluster did not start (it was torn down)
	problems    []string          // what went wrong that no step asked for (a driver that died)
	entries     []trace.Entry     // the timeline
	root        string            // the run's temporary directory, if it has one
	closeErr    error             // tearing the cluster down, or writing the trace
	wall        time.Duration     // running the steps; starting, for a cluster that did not start
	interrupted bool
}

// runOn runs sc on the started cluster c (clk its clock, nil for wall
// time) with the driver of prof (nil for csisim's own), tears c down and
// writes the trace, if asked to.
func runOn(ctx context.Context, c runBackend, clk clock.WithTicker, sc *scenarios.Scenario, prof *profile.Profile, traceFile string) runOutcome {
	runner := &scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: clk, Profile: prof}
	wallStart := time.Now()
	res, runErr := runner.Run(ctx, sc)
	out := runOutcome{result: res, runErr: runErr, wall: time.Since(wallStart)}
	out.closeErr = c.Close()
	out.problems = problems(c)
	out.entries = c.Recorder().Entries()
	if r, ok := c.(interface{ Root() string }); ok {
		out.root = r.Root()
	}
	if traceFile != "" {
		if err := writeTrace(traceFile, out.entries, out.root); err != nil {
			out.closeErr = errors.Join(out.closeErr, err)
		}
	}
	out.interrupted = ctx.Err() != nil
	return out
}

// failure is why a run did not pass, in words.
type failure struct {
	// Kind is the JUnit element: "failure" when the scenario failed (a
	// step, an invariant), "error" when the run could not tell (the
	// cluster did not start, a driver died, cleaning up failed).
	Kind string `json:"kind"`
	// Cause names what went wrong, in a word: step, invariant, start,
	// run, backend (trouble no step asked for), cleanup, exit (the run's
	// process ended without saying how the run went): the JUnit type.
	Cause string `json:"cause"`
	// Summary is one line: the first failure.
	Summary string `json:"summary"`
	// Detail is all of it, as a single run prints it on stderr.
	Detail string `json:"detail"`
}

// failure says why the run did not pass, cleaning up included; nil if it
// passed. An interrupted run is neither (see interrupted).
func (o runOutcome) failure() *failure {
	f := o.runFailure()
	if o.closeErr == nil {
		return f
	}
	cleanup := fmt.Sprintf("csisim: cleaning up: %v\n", o.closeErr)
	if f == nil {
		return &failure{Kind: "error", Cause: "cleanup", Summary: firstLine("cleaning up: " + o.closeErr.Error()), Detail: cleanup}
	}
	f.Detail += cleanup
	return f
}

// runFailure says why the run did not pass, leaving out how cleaning up
// went; nil if it passed.
func (o runOutcome) runFailure() *failure {
	var stepErr *scenarios.StepError
	var invErr *scenarios.InvariantError
	switch {
	case o.startErr != nil:
		return &failure{Kind: "error", Cause: "start", Summary: firstLine(o.startErr.Error()), Detail: fmt.Sprintf("csisim: %v\n", o.startErr)}
	case errors.As(o.runErr, &stepErr):
		detail := fmt.Sprintf("\nFAILED: %v\n", stepErr)
		if stepErr.Expected != "" || stepErr.Observed != "" {
			detail += fmt.Sprintf("  expected: %s\n  observed: %s\n", stepErr.Expected, stepErr.Observed)
		}
		return &failure{Kind: "failure", Cause: "step", Summary: firstLine(stepErr.Error()), Detail: detail}
	case errors.As(o.runErr, &invErr):
		return &failure{Kind: "failure", Cause: "invariant", Summary: firstLine(invErr.Error()),
			Detail: fmt.Sprintf("\n%v\nFAILED: %d steps passed, but the run breaks its invariants\n", invErr, len(o.result.Steps))}
	case o.runErr != nil:
		return &failure{Kind: "error", Cause: "run", Summary: firstLine(o.runErr.Error()), Detail: fmt.Sprintf("csisim: %v\n", o.runErr)}
	case len(o.problems) > 0:
		// Every step passed, but a driver died on its own meanwhile: not
		// a verdict to trust.
		var b strings.Builder
		for _, p := range o.problems {
			fmt.Fprintf(&b, "\nFAILED: every step passed, but %s\n", p)
		}
		return &failure{Kind: "error", Cause: "backend", Summary: "every step passed, but " + o.problems[0], Detail: b.String()}
	}
	return nil
}

// steps says how far the run got: "13 steps" when it passed them all,
// "step 5/13" for the step it failed at.
func (o runOutcome) steps() string {
	if o.result == nil {
		return "no steps"
	}
	for _, st := range o.result.Steps {
		if st.Outcome == scenarios.Failed {
			return fmt.Sprintf("step %d/%d", st.Step, len(o.result.Steps))
		}
	}
	return fmt.Sprintf("%d steps", len(o.result.Steps))
}

// clusterTime is the virtual time the run took.
func (o runOutcome) clusterTime() time.Duration {
	if o.result == nil {
		return 0
	}
	return o.result.Duration
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// seedResult is how the run of one seed ended, as a sweep reports it. The
// run of each seed of a sweep writes it as JSON (--json-result) for the
// sweep to read.
type seedResult struct {
	Seed        uint64        `json:"seed"`
	Steps       string        `json:"steps"`       // "13 steps", "step 5/13"
	ClusterTime time.Duration `json:"clusterTime"` // virtual time, in nanoseconds
	Wall        time.Duration `json:"wall"`        // wall time of the steps, in nanoseconds
	Interrupted bool          `json:"interrupted,omitempty"`
	Skipped     string        `json:"skipped,omitempty"` // why the scenario did not run: the driver lacks what it needs
	Failure     *failure      `json:"failure,omitempty"` // nil: passed (or interrupted)
	// KnownUpstream are the KNOWN lines of the violations a known
	// Kubernetes bug caused (invariant.Violation.KnownLine): a run that
	// has them and no Failure is known-upstream, not failed.
	KnownUpstream []string `json:"knownUpstream,omitempty"`
}

// known says whether the seed's only violations were a known upstream
// bug's: counted apart, not failed.
func (r seedResult) known() bool {
	return !r.Interrupted && r.Failure == nil && len(r.KnownUpstream) > 0
}

// seedResult sums the outcome up for a sweep.
func (o runOutcome) seedResult() seedResult {
	r := seedResult{Seed: o.seed, Steps: o.steps(), ClusterTime: o.clusterTime(), Wall: o.wall, Interrupted: o.interrupted}
	if !o.interrupted {
		r.Failure = o.failure()
	}
	if o.result != nil && r.Failure == nil {
		// The driver, asked at the start, lacks what the scenario needs.
		r.Skipped = o.result.Skipped
	}
	for _, v := range o.knownUpstream() {
		r.KnownUpstream = append(r.KnownUpstream, v.KnownLine())
	}
	return r
}

// knownUpstream are the violations of the run that a known Kubernetes bug
// caused: by the end if the run got there, else by the failed step.
func (o runOutcome) knownUpstream() []invariant.Violation {
	var stepErr *scenarios.StepError
	var invErr *scenarios.InvariantError
	switch {
	case errors.As(o.runErr, &stepErr):
		return stepErr.KnownUpstream
	case errors.As(o.runErr, &invErr):
		return invErr.Result.KnownUpstream
	case o.result != nil && o.result.Invariants != nil:
		return o.result.Invariants.KnownUpstream
	}
	return nil
}

// writeSeedResult writes r as JSON to path.
func writeSeedResult(path string, r seedResult) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("--json-result: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("--json-result: %w", err)
	}
	return nil
}
