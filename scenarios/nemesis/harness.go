package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// Cluster is a fresh simulated cluster for one run (a *cluster.Cluster).
type Cluster interface {
	scenarios.Backend
	fault.Injector
	Clock() *testingclock.FakeClock
	Recorder() *trace.Recorder
	// Root is the cluster's temporary directory.
	Root() string
	Close() error
}

// Harness runs one scenario, each time on a fresh cluster: to survey it,
// under a schedule, and as often as shrinking a schedule takes.
type Harness struct {
	Scenario *scenarios.Scenario
	// Start starts a fresh cluster; quiet is true for the runs nobody
	// watches (the survey, the shrinker's trials), false for the one
	// whose timeline is shown. The harness closes it.
	Start func(ctx context.Context, quiet bool) (Cluster, error)
	// Liveness makes step failures count as failures (see the package
	// doc).
	Liveness bool
	// Progress, if set, receives one line per shrinking trial.
	Progress io.Writer
	// Checks are properties checked over every run's timeline besides the
	// run-wide invariants (which the runner checks): a property under
	// investigation, or, in a test, a detector of a planted bug. A
	// violation is a Safety verdict like an invariant's.
	Checks []invariant.Invariant
	// OnFired, if set, is told of each timed fault as it fires.
	OnFired func(scenarios.FiredFault)
	// RunTrial, if set, is how the shrinker and Trial run the scenario
	// under a schedule: in a child process, say, so that a run that
	// crashes the process is a verdict, not the end. Nil: Run, here.
	RunTrial func(ctx context.Context, s Schedule) (Trial, error)
}

// Trial is what the shrinker needs of one run: its verdict and where its
// faults fired.
type Trial struct {
	Verdict Verdict
	Fired   []scenarios.FiredFault
	// ClusterTime is the virtual time the run took (0 if it crashed).
	ClusterTime time.Duration
}

// Trial runs the scenario quietly under s, with RunTrial if set.
func (h *Harness) Trial(ctx context.Context, s Schedule) (Trial, error) {
	if h.RunTrial != nil {
		return h.RunTrial(ctx, s)
	}
	r, err := h.Run(ctx, s, true)
	if err != nil {
		return Trial{}, err
	}
	return Trial{Verdict: r.Verdict, Fired: r.Result.Fired, ClusterTime: r.Result.Duration}, nil
}

// Run is one run's outcome.
type Run struct {
	Result  *scenarios.Result
	Err     error // what scenarios.Runner.Run returned
	Verdict Verdict
	// Entries is the run's timeline.
	Entries []trace.Entry
	// Root is the run's temporary directory (gone by the time Run
	// returns), which a written trace names as trace.RootWord.
	Root string
}

// Failed says whether the run counts as a failure for the harness.
func (h *Harness) Failed(r *Run) bool { return r.Verdict.Failed(h.Liveness) }

// Survey runs the scenario once without faults and returns what a
// schedule may aim at (the cluster's nodes and the faults it can inject,
// asked before the first step) and how long the run took, with the run.
func (h *Harness) Survey(ctx context.Context) (Targets, *Run, error) {
	var t Targets
	run, err := h.run(ctx, h.Scenario, nil, true, func(c Cluster) error {
		var err error
		t, err = probe(ctx, c)
		return err
	})
	if err != nil {
		return Targets{}, nil, err
	}
	t.Span = run.Result.Duration
	t.Reserved = Reserved(h.Scenario)
	return t, run, nil
}

// Run runs the scenario under schedule s.
func (h *Harness) Run(ctx context.Context, s Schedule, quiet bool) (*Run, error) {
	return h.run(ctx, h.Scenario, s.Timed(), quiet, nil)
}

// RunScenario runs another scenario (a reproducer) on a quiet cluster,
// without timed faults.
func (h *Harness) RunScenario(ctx context.Context, sc *scenarios.Scenario) (*Run, error) {
	return h.run(ctx, sc, nil, true, nil)
}

func (h *Harness) run(ctx context.Context, sc *scenarios.Scenario, timed []scenarios.TimedFault, quiet bool, before func(Cluster) error) (*Run, error) {
	c, err := h.Start(ctx, quiet)
	if err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(c); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	runner := &scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Timed: timed, OnFired: h.OnFired}
	res, runErr := runner.Run(ctx, sc)
	var problems []string
	if ps, ok := c.(scenarios.ProblemSource); ok {
		problems = ps.Problems()
	}
	entries := c.Recorder().Entries()
	r := &Run{Result: res, Err: runErr, Verdict: Classify(res, runErr, problems, entries), Entries: entries, Root: c.Root()}
	r.Verdict = withChecks(r.Verdict, h.Checks, r.Entries)
	if err := c.Close(); err != nil {
		return r, fmt.Errorf("cleaning up after the run: %w", err)
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	return r, nil
}

// Shrink reduces s, whose run failed with want, to a minimal schedule
// that still fails the same way (Verdict.Signature): Minimize over its
// events, each kept with its recovery, then ShiftEarlier. Every trial is
// a run on a fresh cluster. It returns the shrunk schedule and how many
// trials it took.
func (h *Harness) Shrink(ctx context.Context, s Schedule, want Verdict) (Schedule, int, error) {
	trials := 0
	var firstErr error
	fails := func(events []Event) bool {
		if ctx.Err() != nil || firstErr != nil {
			return false
		}
		trials++
		cand := Schedule{Seed: s.Seed, Enabled: s.Enabled, Events: events}
		start := time.Now()
		r, err := h.Trial(ctx, cand)
		if err != nil {
			firstErr = err
			return false
		}
		same := r.Verdict.Signature() == want.Signature()
		if h.Progress != nil {
			fmt.Fprintf(h.Progress, "  shrink trial %d: %d faults -> %s (%s)\n", trials, len(events), r.Verdict.Signature(), time.Since(start).Round(time.Millisecond))
		}
		return same
	}
	events := Minimize(s.Events, fails)
	events = ShiftEarlier(events, fails)
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return Schedule{Seed: s.Seed, Enabled: s.Enabled, Events: events}, trials, firstErr
}

// withChecks adds the violations of checks over entries to v.
func withChecks(v Verdict, checks []invariant.Invariant, entries []trace.Entry) Verdict {
	h := &invariant.History{Entries: entries}
	var broken []string
	var msgs []string
	for _, c := range checks {
		for _, viol := range c.Check(h) {
			broken = append(broken, c.Name)
			msgs = append(msgs, fmt.Sprintf("CHECK %s violated: %s", c.Name, viol.Message))
		}
	}
	if len(broken) == 0 {
		return v
	}
	if v.Class != Safety {
		v = Verdict{Class: Safety, Step: v.Step}
	}
	v.Invariants = uniqueSorted(append(v.Invariants, broken...))
	v.Message = strings.Join(append(msgs, v.Message), "\n")
	return v
}

// probeResources are the resources watch-drop is tried on.
var probeResources = []string{"pods", "persistentvolumeclaims", "persistentvolumes", "nodes", "storageclasses",
	"volumeattachments", "csinodes", "csidrivers", "csistoragecapacities"}

// probe asks a started cluster what a schedule may aim at: its nodes, and
// for each kind, whether (and on which components) it can be injected.
func probe(ctx context.Context, c Cluster) (Targets, error) {
	var t Targets
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(c.RESTConfig()))
	if err != nil {
		return t, fmt.Errorf("surveying the cluster: %w", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return t, fmt.Errorf("surveying the cluster: listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		t.Nodes = append(t.Nodes, n.Name)
	}
	slices.Sort(t.Nodes)
	can := func(f fault.Fault) bool { return c.CanInject(f) == nil }
	t.ControllerManager = can(fault.Fault{Kind: fault.ControllerManagerRestart})
	for _, sc := range fault.Sidecars {
		if can(fault.Fault{Kind: fault.SidecarRestart, Component: sc}) {
			t.Sidecars = append(t.Sidecars, sc)
		}
	}
	components := slices.Clone(fault.Components)
	for _, n := range t.Nodes {
		components = append(components, fault.KubeletComponent(n))
	}
	for _, comp := range components {
		if can(fault.Fault{Kind: fault.APIConflict, Component: comp, Times: 1}) {
			t.Conflicts = append(t.Conflicts, comp)
		}
		for _, r := range probeResources {
			if can(fault.Fault{Kind: fault.WatchDrop, Component: comp, Resource: r, Times: 1}) {
				t.Watches = append(t.Watches, Watch{Component: comp, Resource: r})
			}
		}
	}
	t.Injectable = injectable(t, can)
	return t, nil
}

// injectable are the kinds of Kinds the cluster accepts a typical fault of.
func injectable(t Targets, can func(fault.Fault) bool) []fault.Kind {
	node := ""
	if len(t.Nodes) > 0 {
		node = t.Nodes[0]
	}
	typical := map[fault.Kind]fault.Fault{
		fault.NodeLoss:                 {Kind: fault.NodeLoss, Node: node},
		fault.KubeletRestart:           {Kind: fault.KubeletRestart, Node: node},
		fault.ControllerManagerRestart: {Kind: fault.ControllerManagerRestart},
		fault.CSIError:                 {Kind: fault.CSIError, CSI: fault.CSI{Method: "CreateVolume", Code: errorCodes[0]}, Times: 1},
		fault.CSIDelay:                 {Kind: fault.CSIDelay, CSI: fault.CSI{Method: "CreateVolume", Delay: time.Second}, Times: 1},
		fault.CSIHang:                  {Kind: fault.CSIHang, CSI: fault.CSI{Method: "CreateVolume"}},
		fault.CSILostAnswer:            {Kind: fault.CSILostAnswer, CSI: fault.CSI{Method: "CreateVolume"}, Times: 1},
		fault.DriverCrashMidCall:       {Kind: fault.DriverCrashMidCall, CSI: fault.CSI{Method: "CreateVolume"}, Times: 1},
		fault.DriverCrash:              {Kind: fault.DriverCrash, Plugin: fault.Controller},
		fault.APIServerDown:            {Kind: fault.APIServerDown, API: fault.API{Duration: 10 * time.Second}},
		fault.APISlowWrites:            {Kind: fault.APISlowWrites, API: fault.API{Duration: 10 * time.Second, Latency: time.Second}},
		fault.APIThrottle:              {Kind: fault.APIThrottle, Times: 1, API: fault.API{RetryAfter: time.Second}},
	}
	var out []fault.Kind
	for _, k := range Kinds {
		f, ok := typical[k]
		if !ok || can(f) {
			out = append(out, k)
		}
	}
	return out
}
