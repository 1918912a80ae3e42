package diff

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/realcluster"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// Options configure a comparison.
type Options struct {
	// Seed is the simulator's seed.
	Seed uint64
	// DriverBinary is the csisim binary that runs the driver plugins in
	// both clusters; default: this executable.
	DriverBinary string
	// BinDir holds the real components; default realkube.BinDir().
	BinDir string
	// RealNodes are the nodes that run a real kubelet and containerd in
	// the real run (realcluster.Config.RealNodes); the simulator's are
	// simulated as always, so the kubelet is judged too.
	RealNodes []string
	// Progress, if set, receives a line per run and step.
	Progress io.Writer
	// ComponentLog, if set, receives the output of every process.
	ComponentLog io.Writer
	// Quiet is how long a cluster must show the same snapshot to count
	// as settled after a step (default 1 s; virtual time in the
	// simulator, which also runs at least until the time the real
	// cluster's snapshot was taken); SettleTimeout bounds the wait for
	// quiet (default 30 s: a snapshot that awaits a kubelet's status sync
	// needs 11 s of quiet, statusSyncQuiet).
	Quiet, SettleTimeout time.Duration
}

// pollSettle is how often a settling real cluster is looked at.
const pollSettle = 200 * time.Millisecond

// Run runs sc on a real control plane, then on the simulator, and compares
// them. The real run goes first so that the simulator can take each
// snapshot at the same time after the start point as the real one was
// taken (runSim). A run that fails a step is compared up to that step; an
// error is returned only when a cluster could not be started.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Report, error) {
	if opts.Quiet == 0 {
		opts.Quiet = time.Second
	}
	if opts.SettleTimeout == 0 {
		opts.SettleTimeout = 30 * time.Second
	}
	rep := &Report{Scenario: sc.Name, File: sc.File, Seed: opts.Seed}
	var err error
	if rep.Real, err = runReal(ctx, sc, opts); err != nil {
		return nil, err
	}
	if rep.Sim, err = runSim(ctx, sc, opts, snapshotTimes(rep.Real.Snapshots)); err != nil {
		return nil, err
	}
	rep.Differences = Compare(rep.Sim.Snapshots, rep.Real.Snapshots)
	return rep, nil
}

// backend is what both clusters offer the comparison.
type backend interface {
	scenarios.Backend
	scenarios.CSICallSource
	Recorder() *trace.Recorder
}

// snapshotTimes are the times the snapshots were taken, by step.
func snapshotTimes(snaps []Snapshot) map[int]time.Duration {
	at := make(map[int]time.Duration, len(snaps))
	for _, s := range snaps {
		at[s.Step] = s.At
	}
	return at
}

// runSim runs sc on the simulator. realAt are the times after the start
// point at which the real cluster's snapshots were taken, by step; a step
// without one is settled by quiet alone.
func runSim(ctx context.Context, sc *scenarios.Scenario, opts Options, realAt map[int]time.Duration) (RunResult, error) {
	progress(opts, "running %s on the simulator (seed %d)\n", sc.Name, opts.Seed)
	c, err := cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, DriverArgs: sc.Cluster.DriverFlags(profiles.MustDefault()), DriverName: sc.Cluster.DriverName,
		Seed: opts.Seed, DriverBinary: opts.DriverBinary, DriverLog: opts.ComponentLog})
	if err != nil {
		return RunResult{}, fmt.Errorf("starting the simulator: %w", err)
	}
	// The start point (start.go): run the simulation until its nodes are
	// registered.
	var start time.Time // the start point, in virtual time
	ready := func(ctx context.Context, cs kubernetes.Interface) error {
		defer func() { start = c.Clock().Now() }()
		err := c.RunUntil(ctx, registerTimeout, func() (bool, error) { return nodesRegistered(ctx, cs, nodeNames(sc)) })
		if err != nil {
			return fmt.Errorf("waiting for the node lifecycle controller to register nodes %v: %w", nodeNames(sc), err)
		}
		return nil
	}
	// Settle as the real cluster did: run the simulation at least until
	// the virtual time since the start point at which the real snapshot
	// of this step was taken, and then until the snapshot has not changed
	// for opts.Quiet of virtual time. Quiet alone is not enough: a timer
	// due later than that (a scheduler backoff of up to 10 s, a retry of a
	// sidecar) fires in the real cluster while it runs the step and
	// settles, in real time, but would not fire in a simulation stopped
	// after a quiet second, which would then show the cluster a step
	// behind. Both snapshots of a step are thus of the same moment of the
	// scenario. A simulation already past that moment (a step that took
	// it longer) settles by quiet alone; the times of later steps keep
	// the two from drifting apart. A step the real run did not reach
	// (realAt has none) settles by quiet alone too.
	settle := func(ctx context.Context, cl Clients, n *Normaliser, step int) bool {
		until := start.Add(realAt[step])
		snapshot := func() (Snapshot, error) {
			objs, err := List(ctx, cl)
			if err != nil {
				return Snapshot{}, err
			}
			return n.Snapshot(objs, c.CSICalls()), nil
		}
		return settleVirtual(ctx, c, snapshot, until, opts.Quiet, opts.SettleTimeout)
	}
	run, err := runOn(ctx, sc, opts, "simulator", c, c.Clock(), ready, settle)
	return run, errors.Join(err, c.Close())
}

func runReal(ctx context.Context, sc *scenarios.Scenario, opts Options) (RunResult, error) {
	progress(opts, "running %s on the real control plane\n", sc.Name)
	c, err := realcluster.Start(ctx, realcluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, DriverArgs: sc.Cluster.DriverFlags(profiles.MustDefault()), DriverName: sc.Cluster.DriverName,
		DriverBinary: opts.DriverBinary, BinDir: opts.BinDir, Log: opts.ComponentLog, RealNodes: opts.RealNodes})
	if err != nil {
		return RunResult{}, fmt.Errorf("starting the real control plane: %w", err)
	}
	// Wait until the cluster shows the same snapshot for opts.Quiet.
	settle := func(ctx context.Context, cl Clients, n *Normaliser, _ int) bool {
		deadline := time.Now().Add(opts.SettleTimeout)
		var last Snapshot
		var since time.Time
		for time.Now().Before(deadline) && ctx.Err() == nil {
			objs, err := List(ctx, cl)
			if err == nil {
				s := n.Snapshot(objs, c.CSICalls())
				if since.IsZero() || !s.Equal(last) {
					last, since = s, time.Now()
				} else if time.Since(since) >= quietFor(last, opts.Quiet) {
					return true
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(pollSettle):
			}
		}
		return false
	}
	ready := func(ctx context.Context, cs kubernetes.Interface) error {
		return waitRegistered(ctx, cs, nodeNames(sc))
	}
	run, err := runOn(ctx, sc, opts, "real", c, nil, ready, settle)
	return run, errors.Join(err, c.Close())
}

// runOn waits until b is ready (start.go), then runs sc on it, settling it
// and taking a snapshot after each step, with the time since it was ready
// on clk (nil: the real clock).
func runOn(ctx context.Context, sc *scenarios.Scenario, opts Options, name string, b backend, clk clock.WithTicker,
	ready func(context.Context, kubernetes.Interface) error,
	settle func(ctx context.Context, cl Clients, n *Normaliser, step int) bool) (RunResult, error) {
	cl, err := NewClients(b.RESTConfig())
	if err != nil {
		return RunResult{}, fmt.Errorf("%s: client: %w", name, err)
	}
	run := RunResult{Backend: name, Total: len(sc.Steps)}
	if err := ready(ctx, cl.Kube); err != nil {
		run.Error = err.Error()
		return run, nil
	}
	var now clock.PassiveClock = clock.RealClock{}
	if clk != nil {
		now = clk
	}
	readyAt := now.Now()
	norm := NewNormaliser()
	var snapErr error
	// Both runs work in "default", so that their objects compare.
	runner := &scenarios.Runner{Backend: b, Recorder: b.Recorder(), Clock: clk, Namespace: "default",
		AfterStep: func(ctx context.Context, st scenarios.StepResult) {
			settled := settle(ctx, cl, norm, st.Step)
			at := now.Since(readyAt)
			objs, err := List(ctx, cl)
			if err != nil {
				snapErr = errors.Join(snapErr, fmt.Errorf("snapshot after step %d: %w", st.Step, err))
				return
			}
			s := norm.Snapshot(objs, b.CSICalls())
			// A step's name may hold a generated name (assert pv/${pv}).
			s.Step, s.StepName, s.Outcome, s.Settled, s.At = st.Step, norm.value(st.Name), string(st.Outcome), settled, at
			run.Snapshots = append(run.Snapshots, s)
			progress(opts, "  %s: step %d/%d %s: %s\n", name, st.Step, len(sc.Steps), st.Name, st.Outcome)
		}}
	started := time.Now()
	res, runErr := runner.Run(ctx, sc)
	run.Duration = time.Since(started)
	if res != nil {
		run.Passed = res.Passed()
		for _, st := range res.Steps {
			if st.Outcome == scenarios.Passed || st.Outcome == scenarios.Failed {
				run.Steps++
			}
		}
	}
	if err := errors.Join(runErr, snapErr); err != nil {
		run.Passed = false
		run.Error = err.Error()
	}
	if ctx.Err() != nil {
		return run, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	return run, nil
}

// nodeNames are the scenario's nodes; both backends default to node-1.
func nodeNames(sc *scenarios.Scenario) []string {
	if len(sc.Cluster.Nodes) == 0 {
		return []string{"node-1"}
	}
	return sc.Cluster.Nodes
}

func progress(opts Options, format string, args ...any) {
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, format, args...)
	}
}
