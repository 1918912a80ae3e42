package diff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/csisim/csisim/sim/controller"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/profile"
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
	// Profile is the driver both sides run: csisim's own driver, as it is
	// (nil: drivers/profiles/csisim.yaml) or as a profile starts it with
	// flags of its own (profile.OwnDriverArgs), e.g. csisim-file.
	Profile *profile.Profile
}

// driver is the driver both sides run: the profile, named as the
// scenario's cluster names the driver (else as the profile does), and the
// arguments csisim's driver is started with.
func driver(sc *scenarios.Scenario, opts Options) (prof *profile.Profile, name string, args []string, err error) {
	prof = profiles.MustDefault()
	if opts.Profile != nil {
		p := *opts.Profile
		prof = &p
	}
	own, err := prof.OwnDriverArgs()
	if err != nil {
		return nil, "", nil, fmt.Errorf("the driver of a diff, profile %s: %w", prof.Name, err)
	}
	name = cmp.Or(sc.Cluster.DriverName, prof.Name)
	prof.Name = name
	return prof, name, append(own, sc.Cluster.DriverFlags(prof)...), nil
}

// Run runs sc on the simulator, then on a real control plane, each as
// `csisim run` would, and compares them. A run that fails a step is
// compared up to that step; an error is returned only when a cluster could
// not be started.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Report, error) {
	if len(sc.Drivers) > 0 {
		// Refused before either side starts: the simulator would run
		// them, but there is nothing to compare its run with.
		return nil, fmt.Errorf("%s runs CSI drivers beside the one under test (drivers:), which the real control plane of a diff cannot: "+
			"realcluster deploys one driver, its sidecars and its node plugins; run it on the simulator (csisim run)", sc.File)
	}
	if err := CheckExplanations(sc.Fidelity); err != nil {
		return nil, err
	}
	rep := &Report{Scenario: sc.Name, File: sc.File, Seed: opts.Seed, RealNodes: opts.RealNodes}
	if sc.Cluster.Timing.Scaled() {
		rep.Speedup = sc.Cluster.Timing.Speedup
	}
	var err error
	if rep.Sim, err = runSim(ctx, sc, opts); err != nil {
		return nil, err
	}
	if rep.Real, err = runReal(ctx, sc, opts); err != nil {
		return nil, err
	}
	rep.Differences = Compare(rep.Sim.Snapshots, rep.Real.Snapshots, rep.Sim.History, rep.Real.History)
	rep.explain(sc.Fidelity)
	return rep, nil
}

// backend is what both clusters offer the comparison.
type backend interface {
	scenarios.Backend
	scenarios.CSICallSource
	Recorder() *trace.Recorder
}

// side is one cluster as the comparison runs it.
type side struct {
	name string
	b    backend
	clk  clock.WithTicker // nil: the real clock
	// ready, if set, waits for the start point (start.go).
	ready func(context.Context, kubernetes.Interface) error
	// mark notes the cluster's state at the end of a step without changing
	// it or delaying the next step; read, after the run, turns the mark
	// into the objects the cluster had then.
	mark func(context.Context, Clients) (stepMark, error)
	read func(context.Context, Clients, stepMark) (Objects, error)
}

// stepMark is where a step ended.
type stepMark struct {
	step scenarios.StepResult
	at   time.Duration // since the start point
	// seq is the number of timeline entries by then, and calls the number
	// of CSI calls.
	seq, calls int
	// objects are the objects then, where listing them changes nothing
	// (the simulator's clock does not move while it is listed).
	objects Objects
	// revision is the API server's resourceVersion then, at which a real
	// cluster is read back after the run.
	revision string
}

func runSim(ctx context.Context, sc *scenarios.Scenario, opts Options) (RunResult, error) {
	progress(opts, "running %s on the simulator (seed %d)\n", sc.Name, opts.Seed)
	c, err := startSim(ctx, sc, opts)
	if err != nil {
		return RunResult{}, err
	}
	run, err := simSide(c).run(ctx, sc, opts)
	return run, errors.Join(err, c.Close())
}

// startSim starts the simulator for sc, as `csisim run` does.
func startSim(ctx context.Context, sc *scenarios.Scenario, opts Options) (*cluster.Cluster, error) {
	_, name, args, err := driver(sc, opts)
	if err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, SELinux: sc.Cluster.SELinux, DriverArgs: args, DriverName: name,
		Seed: opts.Seed, DriverBinary: opts.DriverBinary, DriverLog: opts.ComponentLog, HealthMonitor: sc.Cluster.HealthMonitor, Timing: sc.Cluster.Timing})
	if err != nil {
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}
	return c, nil
}

// simSide is the simulator as the comparison runs it. It has no start
// point (start.go): the scenario runs from the simulation's start, as in
// `csisim run`.
func simSide(c *cluster.Cluster) side {
	return side{name: "simulator", b: c, clk: c.Clock(),
		// Nothing runs in the simulation between its steps: a list at
		// the end of one sees exactly what the step left, and costs no
		// virtual time.
		mark: func(ctx context.Context, cl Clients) (stepMark, error) {
			objs, err := List(ctx, cl, At(""))
			return stepMark{objects: objs}, err
		},
		read: func(_ context.Context, _ Clients, m stepMark) (Objects, error) { return m.objects, nil },
	}
}

func runReal(ctx context.Context, sc *scenarios.Scenario, opts Options) (RunResult, error) {
	progress(opts, "running %s on the real control plane\n", sc.Name)
	_, name, args, err := driver(sc, opts)
	if err != nil {
		return RunResult{}, err
	}
	c, err := realcluster.Start(ctx, realcluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, SELinux: sc.Cluster.SELinux, DriverArgs: args, DriverName: name,
		DriverBinary: opts.DriverBinary, BinDir: opts.BinDir, Log: opts.ComponentLog, RealNodes: opts.RealNodes,
		HealthMonitor: sc.Cluster.HealthMonitor, Timing: sc.Cluster.Timing})
	if err != nil {
		return RunResult{}, fmt.Errorf("starting the real control plane: %w", err)
	}
	s := side{name: "real", b: c,
		ready: func(ctx context.Context, cs kubernetes.Interface) error {
			return waitRegistered(ctx, cs, nodeNames(sc))
		},
		// The real cluster goes on while anything looks at it: the end of
		// a step is marked by the API server's resourceVersion, one small
		// request, and the objects are read back at it after the run
		// (realcluster keeps etcd's history for that).
		mark: func(ctx context.Context, cl Clients) (stepMark, error) {
			rv, err := Revision(ctx, cl.Kube)
			return stepMark{revision: rv}, err
		},
		read: func(ctx context.Context, cl Clients, m stepMark) (Objects, error) {
			return List(ctx, cl, At(m.revision))
		},
	}
	run, err := s.run(ctx, sc, opts)
	return run, errors.Join(err, c.Close())
}

// run waits for the start point (start.go), then runs sc on it as
// `csisim run` would, marking the end of each step, and afterwards takes
// a snapshot at each mark and the run's history.
func (s side) run(ctx context.Context, sc *scenarios.Scenario, opts Options) (RunResult, error) {
	cl, err := NewClients(s.b.RESTConfig())
	if err != nil {
		return RunResult{}, fmt.Errorf("%s: client: %w", s.name, err)
	}
	// The finally steps run too, and are numbered after the steps.
	run := RunResult{Backend: s.name, Total: len(sc.Steps) + len(sc.Finally)}
	if s.ready != nil {
		if err := s.ready(ctx, cl.Kube); err != nil {
			run.Error = err.Error()
			return run, nil
		}
	}
	var now clock.PassiveClock = clock.RealClock{}
	if s.clk != nil {
		now = s.clk
	}
	readyAt := now.Now()
	rec := s.b.Recorder()
	var marks []stepMark
	var markErr error
	// Both runs work in "default", so that their objects compare.
	prof, _, _, err := driver(sc, opts)
	if err != nil {
		return RunResult{}, err
	}
	runner := &scenarios.Runner{Backend: s.b, Recorder: rec, Clock: s.clk, Namespace: "default", Profile: prof,
		AfterStep: func(ctx context.Context, st scenarios.StepResult) {
			m, err := s.mark(ctx, cl)
			if err != nil {
				markErr = errors.Join(markErr, fmt.Errorf("marking the end of step %d: %w", st.Step, err))
				return
			}
			m.step, m.at, m.seq, m.calls = st, now.Since(readyAt), rec.Len(), len(s.b.CSICalls())
			marks = append(marks, m)
			progress(opts, "  %s: step %d/%d %s: %s\n", s.name, st.Step, run.Total, st.Name, st.Outcome)
		}}
	started := time.Now()
	res, runErr := runner.Run(ctx, sc)
	run.Duration = time.Since(started)
	if res != nil {
		run.Passed = res.Passed()
		if s.clk != nil {
			run.ClusterTime = res.Duration // virtual time
		}
		for _, st := range res.Steps {
			if st.Outcome == scenarios.Passed || st.Outcome == scenarios.Failed {
				run.Steps++
			}
		}
	}
	snapErr := s.snapshots(ctx, cl, marks, &run)
	if err := errors.Join(runErr, markErr, snapErr); err != nil {
		run.Passed = false
		run.Error = err.Error()
	}
	if ctx.Err() != nil {
		return run, fmt.Errorf("%s: %w", s.name, ctx.Err())
	}
	return run, nil
}

// snapshots takes the snapshot at each mark, and the history of the run
// up to the last one.
func (s side) snapshots(ctx context.Context, cl Clients, marks []stepMark, run *RunResult) error {
	hostname, _ := os.Hostname()
	norm := NewNormaliser(hostname, controller.SimulatedHost)
	calls := s.b.CSICalls()
	var states []markedState
	for _, m := range marks {
		objs, err := s.read(ctx, cl, m)
		if err != nil {
			return fmt.Errorf("reading the cluster as it was at the end of step %d: %w", m.step.Step, err)
		}
		states = append(states, markedState{mark: m, objects: objs, calls: calls[:min(m.calls, len(calls))]})
	}
	run.Snapshots = snapshotsOf(norm, states)
	if len(marks) == 0 {
		return nil
	}
	last := marks[len(marks)-1]
	norm.Learn(Objects{}, calls)
	run.History = norm.History(historyUntil(s.b.Recorder().Entries(), last.seq, last.revision))
	return nil
}

// markedState is what a cluster held at the end of a step.
type markedState struct {
	mark    stepMark
	objects Objects
	calls   []trace.Entry
}

// snapshotsOf normalises each step's state into its snapshot. The names of
// every step are learnt first, in order, so that an object shows under its
// placeholder also at a step before the one whose state tells its name: a
// group snapshot's member content, made before its status names the group
// (learnGroupSnapshots), which a fast real snapshot-controller has made by
// the end of the step that makes the group.
func snapshotsOf(norm *Normaliser, states []markedState) []Snapshot {
	for _, st := range states {
		norm.Learn(st.objects, st.calls)
	}
	var out []Snapshot
	for _, st := range states {
		m := st.mark
		snap := norm.normalise(st.objects, st.calls)
		// A step's name may hold a generated name (assert pv/${pv}).
		snap.Step, snap.StepName, snap.Outcome, snap.At = m.step.Step, norm.value(m.step.Name), string(m.step.Outcome), m.at
		if m.step.Outcome == scenarios.Failed {
			snap.Detail = norm.value(m.step.Detail)
		}
		out = append(out, snap)
	}
	return out
}

// historyUntil is the timeline up to a step's mark: the entries before
// seq, and where revision is set (a real cluster, whose timeline learns of
// writes late) the API writes up to that resourceVersion instead.
func historyUntil(entries []trace.Entry, seq int, revision string) []trace.Entry {
	limit, err := strconv.ParseUint(revision, 10, 64)
	byRevision := revision != "" && err == nil
	var out []trace.Entry
	for _, e := range entries {
		if byRevision && e.Kind == trace.API && e.Write != nil && e.Write.Object != nil {
			if m, err := meta.Accessor(e.Write.Object); err == nil {
				if rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64); err == nil && rv <= limit {
					out = append(out, e)
				}
			}
			continue
		}
		if e.Seq <= seq {
			out = append(out, e)
		}
	}
	return out
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
