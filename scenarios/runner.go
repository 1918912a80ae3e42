package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/timing"
	"github.com/csisim/csisim/trace"
)

// DefaultPollInterval is how often a wait step looks at the cluster when
// Runner.PollInterval is not set.
const DefaultPollInterval = 20 * time.Millisecond

// Runner runs scenarios against a backend. A Runner holds no state between
// runs.
type Runner struct {
	Backend Backend
	// Recorder, if set, receives a trace.Step entry when each step starts,
	// passes or fails, interleaved with whatever else the backend records.
	Recorder *trace.Recorder
	// Clock times waits, sleeps and durations; nil means the real clock.
	Clock clock.WithTicker
	// PollInterval is how often a wait looks; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Out, if set, receives one progress line per step.
	Out io.Writer
	// SkipUnsupported skips the checks the backend cannot make (marking
	// them Skipped) instead of refusing the scenario before it starts, and
	// skips the whole scenario (Result.Skipped, naming the step) for a
	// fault it cannot inject: the steps after a fault wait for what it
	// does. A real cluster runs the library this way: it cannot see CSI
	// calls.
	SkipUnsupported bool
	// AfterStep, if set, is called after each step that ran, passed or
	// failed, on the runner's goroutine before the next step starts: where
	// a tool that compares runs (csisim diff) looks at the cluster.
	AfterStep func(ctx context.Context, st StepResult)
	// Timed are faults to inject at virtual times while the steps run,
	// wherever the steps are then (see TimedFault); a backend on virtual
	// time only. Result.Fired says where each fired.
	Timed []TimedFault
	// OnFired, if set, is called as each timed fault fires, before it is
	// injected: a record that outlives a run that crashes.
	OnFired func(FiredFault)
	// Profile is the driver under test: the values of ${driver.*}, and
	// what a scenario's needs are checked against (a scenario whose needs
	// it lacks is skipped, see Result.Skipped). nil means csisim's own
	// driver (drivers/profiles/csisim.yaml).
	Profile *profile.Profile
	// Restore puts back, at the end, what the run changed outside its own
	// namespace — deletes the cluster-scoped objects it made, writes back
	// those it changed or deleted (a Node it tainted, the deployed
	// CSIDriver) — so that the runs that share a cluster find it as they
	// left it. For a cluster of many runs (make e2e, make e2e-kind); the
	// simulator and the real clusters started for one run need none.
	Restore bool
	// Namespace is where the steps' namespaced objects go when they name
	// none, and ${namespace}. Empty means "default" on a simulated
	// backend, and on any other a namespace made for the run,
	// csisim-<scenario>-<suffix>, deleted with what is in it at the end.
	Namespace string
}

// Run executes the steps of s in order and stops at the first failure,
// returning the partial Result and a *StepError. Other errors (a nil
// Backend, an unreachable API server config) are returned as plain errors.
func (r *Runner) Run(ctx context.Context, s *Scenario) (*Result, error) {
	if why := s.SkipReason(r.profileFor(s)); why != "" {
		return r.skipped(s, why), nil
	}
	if r.Backend == nil {
		return nil, errors.New("run scenario: Runner.Backend is nil")
	}
	if why := r.unstartedCluster(s); why != "" {
		// On a shared cluster (SkipUnsupported) a scenario that needs the
		// cluster started otherwise is a capability the cluster lacks:
		// skipped before it starts, as a fault it cannot inject is.
		if r.SkipUnsupported {
			return r.skipped(s, why), nil
		}
		return nil, fmt.Errorf("run scenario %s: %s", s.Name, why)
	}
	var have timing.Timing
	if t, ok := r.Backend.(Timed); ok {
		have = t.Timing()
	}
	if why := timingRefusal(s.Cluster.Timing, have); why != "" {
		return nil, fmt.Errorf("run scenario %s: %s", s.Name, why)
	}
	cfg := r.Backend.RESTConfig()
	if cfg == nil {
		return nil, errors.New("run scenario: backend has no REST config")
	}
	objects, err := newKubeObjects(cfg, r.clock())
	if err != nil {
		return nil, fmt.Errorf("run scenario %s: %w", s.Name, err)
	}
	return r.run(ctx, s, objects)
}

func (r *Runner) clock() clock.WithTicker {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

func (r *Runner) pollInterval() time.Duration {
	if r.PollInterval <= 0 {
		return DefaultPollInterval
	}
	return r.PollInterval
}

// run is Run with the cluster access supplied, so tests can use a fake.
func (r *Runner) run(ctx context.Context, s *Scenario, objects objectStore) (*Result, error) {
	clk := r.clock()
	started := clk.Now()
	all := s.allSteps()
	res := newResult(s, all)
	nodes, why, err := r.nodeNames(ctx, s)
	if err != nil {
		return nil, err
	}
	if why == "" {
		why, err = r.csiDriverConflict(ctx, s, objects, nodes)
		if err != nil {
			return nil, err
		}
	}
	if why != "" {
		return r.skipped(s, why), nil
	}
	if err := checkDrivers(s, r.Backend); err != nil {
		if r.SkipUnsupported {
			return r.skipped(s, err.Error()), nil
		}
		return nil, fmt.Errorf("run scenario %s: %w", s.Name, err)
	}
	if err := refusedManifests(all, r.Backend); err != nil {
		return nil, fmt.Errorf("run scenario %s: %w", s.Name, err)
	}
	r.printf("scenario %s (%s): %d steps\n", s.Name, s.File, len(all))

	skip, why, serr := r.unsupportedSteps(s, all, nodes)
	if why != "" {
		return r.skipped(s, why), nil
	}
	if serr != nil {
		res.Duration = clk.Since(started)
		return res, serr
	}
	if err := checkTimed(r.Timed, r.Backend); err != nil {
		res.Duration = clk.Since(started)
		return res, fmt.Errorf("run scenario %s: %w", s.Name, err)
	}
	view, err := r.sharedClusterView(ctx, s, objects, nodes)
	if err != nil {
		res.Duration = clk.Since(started)
		return res, fmt.Errorf("run scenario %s: %w", s.Name, err)
	}
	ns, err := r.openNamespace(ctx, s, objects)
	if err != nil {
		res.Duration = clk.Since(started)
		return res, fmt.Errorf("run scenario %s: %w", s.Name, err)
	}
	res.Namespace = ns.name
	ex := r.newExecutor(s, objects, clk, ns.name)
	defer func() { res.Fired = ex.timed.fired }()
	ex.others, ex.confine = view.others, view.confine
	prof := r.profileFor(s)
	scope := stepScope{builtin: builtinVars(prof, ns.name), namespace: ns.name, nodes: nodes, unasked: unaskedCallsOf(prof)}
	for i := range all {
		if missing := prof.Missing(all[i].Needs); len(missing) > 0 && skip[i] == "" {
			skip[i] = fmt.Sprintf("needs %s: %s", listWords(capabilityNames(missing), ""), whyMissing(prof, missing))
		}
	}

	var failed, finallyFailed *StepError
	for i, raw := range all {
		if failed != nil && !raw.Finally {
			continue // the steps after a failure do not run; finally does
		}
		if why, ok := skip[i]; ok {
			res.Steps[i].Outcome, res.Steps[i].Detail = Skipped, why
			r.record(raw, trace.Entry{Detail: fmt.Sprintf("step %d skipped: %s", raw.Index, why)})
			r.printf("  skip %d/%d %s: %s\n", raw.Index, len(all), raw.Name, why)
			continue
		}
		serr := r.runStep(ctx, ex, s, res, i, raw, scope)
		switch {
		case serr == nil:
		case !raw.Finally:
			failed = serr
		case finallyFailed == nil:
			finallyFailed = serr
		}
	}
	outlastErr := ex.outlastTimed(ctx)
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	cleanupErr := errors.Join(outlastErr, r.undoFaults(cctx), ns.close(cctx, ex), ex.giveBack(cctx))
	res.Duration = clk.Since(started)
	if err := runFailure(s, failed, finallyFailed, cleanupErr); err != nil {
		return res, err
	}
	return res, r.checkInvariants(ctx, s, res)
}

// unstartedCluster says what s asks of how the cluster was started that
// the backend was not started with; "" when nothing.
func (r *Runner) unstartedCluster(s *Scenario) string {
	if s.Cluster.Deploy != "" {
		d, ok := r.Backend.(Deployer)
		if !ok || filepath.Clean(d.DeployedFrom()) != filepath.Clean(s.Cluster.Deploy) {
			return fmt.Sprintf("its cluster is deployed from %s (cluster.deploy), and this backend was not started "+
				"with those manifests: run it on the simulator (csisim run), which applies them", s.Cluster.Deploy)
		}
	}
	if h, ok := r.Backend.(HealthMonitored); s.Cluster.HealthMonitor && (!ok || !h.RunsHealthMonitor()) {
		return "it asks for the external-health-monitor sidecar (cluster.healthMonitor), " +
			"which this backend was not started with: run it on the simulator (csisim run)"
	}
	return ""
}

// cleanupTimeout bounds putting the cluster back at the end of a run:
// a node its faults stopped coming back (up to 5 minutes), the run's
// namespace going (namespaceCleanupTimeout), what it changed written back.
const cleanupTimeout = 10 * time.Minute

// cleanupContext is the context the end of a run puts the cluster back
// with: ctx's values without its deadline or cancellation, bounded by
// cleanupTimeout of its own. A run that timed out (ctx's deadline) must
// still start the node it stopped and delete its namespace, or the next
// run on the shared cluster inherits them.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// undoFaults has a FaultUndoer backend put back what the run's faults
// left changed, on a shared cluster (Restore).
func (r *Runner) undoFaults(ctx context.Context) error {
	u, ok := r.Backend.(FaultUndoer)
	if !r.Restore || !ok {
		return nil
	}
	return u.UndoFaults(ctx)
}

// newResult is the result of a scenario none of whose steps has run yet.
func newResult(s *Scenario, all []Step) *Result {
	res := &Result{Scenario: s.Name, File: s.File, Vars: map[string]string{}}
	for _, st := range all {
		res.Steps = append(res.Steps, StepResult{Step: st.Index, Name: st.Name, Action: st.Action(), Line: st.Line, Outcome: NotRun})
	}
	return res
}

// unsupportedSteps refuses up front a scenario the backend cannot run to
// the end, or, with SkipUnsupported, returns why each step it cannot run
// is skipped, by index — or why the whole scenario is skipped, when such
// a step is a fault: the steps after a fault wait for its effects, and
// without it they would wait for what cannot come.
func (r *Runner) unsupportedSteps(s *Scenario, all []Step, nodes map[string]string) (map[int]string, string, *StepError) {
	skip := map[int]string{}
	for i := range all {
		if err := unsupported(withNodes(all[i], nodes), r.Backend); err != nil {
			if r.SkipUnsupported && all[i].Fault != nil {
				return nil, fmt.Sprintf("step %d (%s) at %s:%d: %v", all[i].Index, all[i].Name, all[i].file(s), all[i].Line, err), nil
			}
			if r.SkipUnsupported {
				skip[i] = err.Error()
				continue
			}
			serr := r.stepError(s, all[i], err)
			r.printf("  cannot run: %v\n", serr)
			return nil, "", serr
		}
	}
	return skip, "", nil
}

// newExecutor is what runs the steps of s in namespace ns: timed faults
// count from now, and only the CSI calls made from now on count.
func (r *Runner) newExecutor(s *Scenario, objects objectStore, clk clock.WithTicker, ns string) *executor {
	ex := &executor{runner: r, objects: objects, clock: clk, timed: newTimedFaults(r.Timed)}
	ex.timed.started = clk.Now()
	if _, simulated := r.Backend.(Simulated); r.Restore && !simulated {
		ex.borrowed = &borrowed{runNamespace: ns, seen: map[string]bool{}}
	}
	if src, ok := r.Backend.(CSICallSource); ok {
		ex.csi = src
		// Only calls made while this scenario runs count.
		ex.csiBaseline = len(src.CSICalls())
	}
	ex.values = driverValues(r.profileFor(s))
	return ex
}

// stepScope is what a step is expanded and fitted with: the built-in
// variables, the run's namespace, the scenario's node names on the
// cluster, and the calls the driver was not asked about.
type stepScope struct {
	builtin   map[string]string
	namespace string
	nodes     map[string]string
	unasked   unaskedCalls
}

// runStep runs step i of s (raw, before its variables are expanded) and
// records its outcome in res; it returns the step's error, if it failed.
func (r *Runner) runStep(ctx context.Context, ex *executor, s *Scenario, res *Result, i int, raw Step, scope stepScope) *StepError {
	clk := ex.clock
	total := len(res.Steps)
	stepStart := clk.Now()
	ex.timed.step, ex.timed.stepStart = raw.Index, stepStart
	st, err := expandStepFor(raw, withSaved(scope.builtin, res.Vars), ex.values, scope.nodes)
	st = fitToDriver(inNamespace(st, scope.namespace), scope.unasked)
	r.record(st, trace.Entry{Detail: fmt.Sprintf("step %d/%d started at %s:%d", st.Index, total, st.file(s), st.Line)})

	var out stepOutcome
	if err == nil {
		err = ex.fireDue(ctx)
	}
	if err == nil {
		out, err = ex.execute(ctx, st)
	}
	elapsed := clk.Since(stepStart)
	sr := &res.Steps[i]
	sr.Name, sr.Duration = st.Name, elapsed
	if err != nil {
		serr := r.stepError(s, st, err)
		sr.Outcome, sr.Detail = Failed, err.Error()
		r.record(st, trace.Entry{Detail: fmt.Sprintf("step %d failed after %s", st.Index, formatDuration(elapsed)), Err: err.Error()})
		r.printf("  FAIL %d/%d %s (%s)\n%v\n", st.Index, total, st.Name, formatDuration(elapsed), serr)
		r.afterStep(ctx, *sr)
		return serr
	}
	maps.Copy(res.Vars, out.saved)
	sr.Outcome, sr.Detail = Passed, out.detail
	r.record(st, trace.Entry{Detail: fmt.Sprintf("step %d passed in %s: %s", st.Index, formatDuration(elapsed), out.detail)})
	r.printf("  ok   %d/%d %s (%s)\n", st.Index, total, st.Name, formatDuration(elapsed))
	r.afterStep(ctx, *sr)
	return nil
}

// runFailure is the error a run ends with: the first failed step's (with
// a finally step's failure and the clean-up's as further problems), else
// a finally step's, else the clean-up's; nil if all went well.
func runFailure(s *Scenario, failed, finallyFailed *StepError, cleanupErr error) error {
	switch {
	case failed != nil:
		if finallyFailed != nil {
			failed.Problems = append(failed.Problems, "finally: "+finallyFailed.Error())
		}
		if cleanupErr != nil {
			failed.Problems = append(failed.Problems, cleanupErr.Error())
		}
		return failed
	case finallyFailed != nil:
		if cleanupErr != nil {
			finallyFailed.Problems = append(finallyFailed.Problems, cleanupErr.Error())
		}
		return finallyFailed
	case cleanupErr != nil:
		return fmt.Errorf("run scenario %s: %w", s.Name, cleanupErr)
	}
	return nil
}

func (r *Runner) afterStep(ctx context.Context, sr StepResult) {
	if r.AfterStep != nil {
		r.AfterStep(ctx, sr)
	}
}

// stepError wraps a step's failure with where the step is.
func (r *Runner) stepError(s *Scenario, st Step, err error) *StepError {
	serr := &StepError{Step: st.Index, Name: st.Name, Action: st.Action(), File: st.file(s), Line: st.Line, Err: err}
	var cerr *conditionError
	if errors.As(err, &cerr) {
		serr.Expected, serr.Observed = cerr.expected, cerr.observed
	}
	if ps, ok := r.Backend.(ProblemSource); ok {
		serr.Problems = ps.Problems()
	}
	serr.Broken, serr.KnownUpstream = r.brokenSoFar(s)
	for _, v := range serr.Broken {
		serr.Problems = append(serr.Problems, fmt.Sprintf("INVARIANT %s violated: %s", v.Invariant, v.Message))
	}
	for _, v := range serr.KnownUpstream {
		serr.Problems = append(serr.Problems, v.KnownLine())
	}
	return serr
}

// record adds a step entry to the trace; e carries Detail and Err.
func (r *Runner) record(st Step, e trace.Entry) {
	if r.Recorder == nil {
		return
	}
	e.Kind, e.Actor, e.Verb, e.Object = trace.Step, "scenario", st.Action(), st.Name
	r.Recorder.Add(e)
}

func (r *Runner) printf(format string, args ...any) {
	if r.Out != nil {
		fmt.Fprintf(r.Out, format, args...)
	}
}
