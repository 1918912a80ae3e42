package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/realcluster"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
	"github.com/csisim/csisim/trace"
)

func runCommand() *command {
	return &command{
		name:    "run",
		summary: "run a scenario on the simulator and print its timeline",
		usage: []string{"csisim run [flags] SCENARIO.yaml",
			"csisim run --seeds A..B [--parallel P] [--shard i/n] [--junit FILE] [flags] SCENARIO.yaml"},
		about: "The second form runs the scenario once per seed and prints one line per seed, a failing\n" +
			"seed's first failure and the command that replays it alone; it exits 1 if any seed failed.",
		minArgs: 1, maxArgs: 1, signals: true,
		new: func() subcommand { return &runCmd{} },
	}
}

// runCmd is `csisim run`: start a simulated cluster, run one scenario on
// it with the timeline printed as it happens, and tear everything down,
// also when interrupted. Or the same under a nemesis, or once per seed of
// a sweep.
type runCmd struct {
	invocation
	seed          uint64
	driverLog     string
	quiet         bool
	driverCommand string
	driverName    string
	mockDriver    bool
	driverProfile string
	traceFile     string
	backend       string
	cpuProfile    string
	memProfile    string
	seeds         string
	parallel      int
	shardSpec     string
	jsonResult    string
	junitFile     string
	realNodes     realNodesFlag
	deploy        string
	nem           *nemesisFlags
	explainAt     explainFlag
	timeline      *timelineFlags
}

func (c *runCmd) flags(fs *flag.FlagSet) {
	fs.Uint64Var(&c.seed, "seed", 1, "seed for UIDs and generated names; the same seed gives the same names")
	fs.StringVar(&c.driverLog, "driver-log", "", "write the CSI driver processes' output to this file; {seed} in the name stands for the seed\n"+
		"(with --seeds, the name needs it; with --backend realkube: every process's, the control plane's and sidecars' too)")
	fs.BoolVar(&c.quiet, "quiet", false, "do not print the timeline as it happens, only the result\n"+
		"(--format json and mermaid still print the timeline when the run ends)")
	fs.StringVar(&c.driverCommand, "driver-command", "", "run this CSI driver instead of csisim's own, for the controller and every node:\n"+
		"a command line whose words may contain {endpoint}, {nodeID}, {stateDir} and {root}, e.g.\n"+
		"'/usr/bin/hostpathplugin --endpoint={endpoint} --nodeid={nodeID} --statedir={stateDir}' (no shell quoting)")
	fs.StringVar(&c.driverName, "driver-name", "", "the name the driver reports (default: the scenario's cluster.driverName, else hostpath.csisim.io)")
	fs.BoolVar(&c.mockDriver, "mock-driver", false, "use the in-memory mock CSI driver (no mounts, no root needed); the same as --driver mock")
	fs.StringVar(&c.driverProfile, "driver", "", driverUsage)
	fs.StringVar(&c.traceFile, "trace", "", "also write the timeline to this file, without wall-clock durations:\n"+
		"two runs with the same seed and scenario write the same file; {seed} in the name stands for the seed\n"+
		"(with --seeds, the name needs it: each seed writes its own file)")
	fs.StringVar(&c.backend, "backend", "sim", "where to run: sim, the simulator, or realkube, a real control plane (make realkube-bins)\n"+
		"with csisim's simulated kubelets joining it; realkube runs on wall time and ignores --seed")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a heap profile of the run to this file: what is in use at the run's largest heap, and every allocation (go tool pprof -sample_index=alloc_space)")
	fs.StringVar(&c.seeds, "seeds", "", seedsUsage)
	fs.IntVar(&c.parallel, "parallel", 1, "with --seeds, how many seeds run at once, each in a csisim process and on a cluster of its own\n"+
		"(the output and each seed's result are the same whatever it is)")
	fs.StringVar(&c.shardSpec, "shard", "", shardUsage)
	fs.StringVar(&c.jsonResult, "json-result", "", "write how the run ended to this file as JSON (a sweep runs each seed with it)")
	fs.StringVar(&c.junitFile, "junit", "", "write a JUnit XML report to this file: one test case per seed, a failing one\n"+
		"with its first failure and the command that replays it")
	fs.Var(&c.realNodes, "real-nodes", realNodesUsage)
	c.nem = addNemesisFlags(fs)
	fs.StringVar(&c.explainAt.target, "explain", "", explainUsage)
	fs.StringVar(&c.deploy, "deploy", "", deployUsage+" (the scenario's cluster.deploy, if it has one, is the default)")
	c.timeline = addTimelineFlags(fs)
}

// Run checks the flags, loads the scenario, chooses the driver, and runs
// the scenario once, under a nemesis, or once per seed.
func (c *runCmd) Run(ctx context.Context) error {
	sweepSeeds, sweepShard, err := c.checkFlags()
	if err != nil {
		return err
	}
	sc, err := scenarios.Load(c.file())
	if err != nil {
		return usageError(err)
	}
	realNodeNames, err := c.realNodes.resolve(sc.Cluster.Nodes)
	if err != nil {
		return usageError(err)
	}
	// Whichever flag names the driver, a profile starts it (driverprofile.go).
	cfg, prof, skip, err := c.chooseDriver(ctx, sc)
	if err != nil || skip != "" {
		if skip != "" {
			return c.reportSkipped(sc, skip)
		}
		return err
	}
	if deploy := cmp.Or(c.deploy, sc.Cluster.Deploy); deploy != "" {
		if c.backend != "sim" {
			return usagef("--deploy (or cluster.deploy) applies the driver's manifests on the simulator only; --backend %s is started from csisim's own", c.backend)
		}
		if err := clusterprofile.Deploy(&cfg, prof, deploy, c.timeline.info(c.stdout, c.stderr)); err != nil {
			return usageError(err)
		}
	}
	if err := checkRoot(prof != nil && prof.Has(profile.RealMounts), euid()); err != nil {
		return err
	}
	if c.cpuProfile != "" {
		stopProfile, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return usageError(err)
		}
		defer stopProfile()
	}
	if c.memProfile != "" {
		stopProfile, err := startHeapProfile(c.memProfile)
		if err != nil {
			return usageError(err)
		}
		defer stopProfile()
	}
	sweepDeadRuns(c.stderr)
	switch {
	case sweepSeeds != nil:
		return c.runSweep(ctx, sc, sweepShard.pick(sweepSeeds), sweepShard)
	case c.nem.on:
		cfg.Seed = c.seed
		return exitStatus(c.runNemesis(ctx, sc, cfg))
	}
	return c.runOnce(ctx, sc, cfg, prof, realNodeNames)
}

// file is the scenario file, the one argument.
func (c *runCmd) file() string { return c.args[0] }

// checkFlags refuses flags that do not go together, and returns the seeds
// of a sweep (nil for a single run) and the shard of them to run.
func (c *runCmd) checkFlags() ([]uint64, shard, error) {
	switch {
	case c.backend != "sim" && c.backend != "realkube":
		return nil, shard{}, usagef("--backend %q: the backends are sim and realkube", c.backend)
	case c.realNodes.set() && c.backend != "realkube":
		return nil, shard{}, usagef("--real-nodes joins real kubelets to the real control plane; add --backend realkube")
	case c.backend == "realkube" && (c.mockDriver || c.driverCommand != "" || c.driverProfile != ""):
		return nil, shard{}, usagef("--backend realkube runs csisim's own driver; --driver, --mock-driver and --driver-command are for the simulator")
	}
	sweepSeeds, sweepShard, err := sweepFlags(c.fs, c.seeds, c.shardSpec, c.backend, c.parallel)
	if err != nil {
		return nil, shard{}, usageError(err)
	}
	if err := c.explainAt.check(); err != nil {
		return nil, shard{}, usagef("--explain: %v", err)
	}
	if err := c.nem.check(c.backend); err != nil {
		return nil, shard{}, usageError(err)
	}
	if err := c.timeline.check(sweepSeeds != nil, c.nem.on); err != nil {
		return nil, shard{}, usageError(err)
	}
	return sweepSeeds, sweepShard, nil
}

// chooseDriver returns the cluster configuration and profile of the
// driver the flags choose, or why the scenario is skipped with it: it
// needs what the driver lacks.
func (c *runCmd) chooseDriver(ctx context.Context, sc *scenarios.Scenario) (cluster.Config, *profile.Profile, string, error) {
	drv := driverChoice{profile: c.driverProfile, mock: c.mockDriver, command: c.driverCommand, name: c.driverName}
	cfg, prof, err := drv.clusterConfig(ctx, sc.Cluster.Request(), sc.Cluster.DriverName, c.stderr)
	var unsupported *profile.Unsupported
	switch {
	case errors.As(err, &unsupported) && c.backend == "sim":
		return cfg, nil, unsupported.Reason, nil
	case err != nil && c.backend == "sim":
		return cfg, nil, "", usageError(err)
	}
	if prof != nil {
		// ${driver.name} is the name the driver runs under.
		prof.Name = cfg.DriverName
		if why := sc.SkipReason(prof); why != "" {
			if c.driverCommand != "" {
				why += " (--driver-command declares nothing the driver cannot report of itself; a driver profile does: docs/drivers.md)"
			}
			return cfg, prof, why, nil
		}
	}
	if len(sc.Drivers) > 0 && c.backend != "sim" {
		return cfg, prof, "", usagef("%s runs more CSI drivers beside the one under test (drivers:), which --backend %s cannot: "+
			"its real control plane is deployed with one driver's sidecars and node plugins; run it on the simulator", sc.File, c.backend)
	}
	if err := clusterprofile.AddDrivers(ctx, &cfg, sc.Drivers, sc.Cluster.Request(), clusterprofile.Options{BuildLog: c.stderr}); err != nil {
		return cfg, prof, "", usageError(err)
	}
	cfg.Timing = sc.Cluster.Timing
	return cfg, prof, "", nil
}

// replay is the command that runs one seed alone, the way this run runs.
func (c *runCmd) replay() func(uint64) string { return replayCommand(seedFlags(c.fs), c.file()) }

// reportSkipped says the scenario did not run, and why (reportSkipped).
func (c *runCmd) reportSkipped(sc *scenarios.Scenario, why string) error {
	return exitStatus(reportSkipped(sc, why, skippedRun{seed: c.seed, file: c.file(), jsonResult: c.jsonResult,
		junitFile: c.junitFile, replay: c.replay()}, c.stdout, c.stderr))
}

// runSweep runs each seed in a child process (sweep.go).
func (c *runCmd) runSweep(ctx context.Context, sc *scenarios.Scenario, seeds []uint64, part shard) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the csisim binary to run each seed with: %w", err)
	}
	child := childRun{binary: exe, args: childArgs(seedFlags(c.fs), c.traceFile, c.driverLog), file: c.file(), stopGrace: time.Minute}
	return exitStatus(runSweep(ctx, sweep{run: child.runSeed, scenario: sc.Name, file: c.file(), seedsSpec: c.seeds, shard: part,
		seeds: seeds, parallel: c.parallel, junitFile: c.junitFile, replay: c.replay()}, c.stdout, c.stderr))
}

// runOnce is a single run, on the simulator or the real control plane,
// with the timeline printed as the flags say.
func (c *runCmd) runOnce(ctx context.Context, sc *scenarios.Scenario, cfg cluster.Config, prof *profile.Profile, realNodeNames []string) error {
	sim := simRun{file: c.file(), cluster: cfg, traceFile: c.traceFile, driverLog: c.driverLog, profile: prof,
		notices: c.timeline.info(c.stdout, c.stderr)}
	if !c.quiet {
		sim.cluster.OnEntry = c.timeline.onEntry(c.stdout)
	}
	info := c.timeline.info(c.stdout, c.stderr)
	title := fmt.Sprintf("scenario %s, seed %d", sc.Name, c.seed)
	var out runOutcome
	if c.backend == "realkube" {
		title = fmt.Sprintf("scenario %s, real control plane %s", sc.Name, realkube.KubeVersion)
		fmt.Fprintf(info, "scenario %s (%s), real control plane %s%s\n", sc.Name, sc.File, realkube.KubeVersion, realNodesNote(realNodeNames))
		out = runOnRealkube(ctx, realcluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, SELinux: sc.Cluster.SELinux, DriverArgs: sc.Cluster.DriverArgs, RealNodes: realNodeNames,
			DriverName: realkubeDriverName(sc, c.driverName), OnEntry: sim.cluster.OnEntry, HealthMonitor: sc.Cluster.HealthMonitor, Timing: sc.Cluster.Timing}, sc, withSeed(c.driverLog, c.seed), withSeed(c.traceFile, c.seed))
	} else {
		fmt.Fprintf(info, "scenario %s (%s), seed %d\n", sc.Name, sc.File, c.seed)
		out = sim.runSeed(ctx, c.seed)
	}
	out.seed = c.seed
	return exitStatus(c.report(ctx, sc, out, title, info))
}

// report prints how the run went — the timeline in its format, the
// verdict, an explanation — writes its results, and returns the exit
// code.
func (c *runCmd) report(ctx context.Context, sc *scenarios.Scenario, out runOutcome, title string, info io.Writer) int {
	var code int
	c.timeline.flush()
	var notStarted *startError
	if errors.As(out.startErr, &notStarted) {
		code = startFailed(ctx, notStarted.what, notStarted.err, c.stderr)
	} else {
		if err := c.timeline.finish(out, title, c.stdout); err != nil {
			fmt.Fprintf(c.stderr, "csisim: %v\n", err)
			code = 1
		}
		code = max(code, reportRun(out, info, c.stderr))
		c.explainAt.print(sc, out, info, c.stderr)
	}
	// Also a run that did not start has a result, for the sweep that
	// runs it.
	if err := writeResults(out.seedResult(), sc.Name, c.file(), c.jsonResult, c.junitFile, c.replay()); err != nil {
		fmt.Fprintf(c.stderr, "csisim: %v\n", err)
		code = max(code, 1)
	}
	return code
}

// runOnRealkube starts a real control plane with cfg, runs sc on it and
// tears it down.
func runOnRealkube(ctx context.Context, cfg realcluster.Config, sc *scenarios.Scenario, driverLog, traceFile string) runOutcome {
	if driverLog != "" {
		f, err := os.Create(driverLog)
		if err != nil {
			return runOutcome{startErr: fmt.Errorf("--driver-log: %w", err)}
		}
		defer f.Close()
		cfg.Log = f
	}
	rc, err := realcluster.Start(ctx, cfg)
	if err != nil {
		return runOutcome{startErr: &startError{what: "the real control plane", err: err}, interrupted: ctx.Err() != nil}
	}
	return runOn(ctx, rc, nil, sc, nil, traceFile)
}

// writeResults writes the result of a single run as JSON and as a JUnit
// report, to the files asked for ("" for none).
func writeResults(r seedResult, scenarioName, file, jsonResult, junitFile string, replay func(uint64) string) error {
	var errs []error
	if jsonResult != "" {
		errs = append(errs, writeSeedResult(jsonResult, r))
	}
	if junitFile != "" {
		errs = append(errs, writeJUnit(junitFile, junitReport(scenarioName, file, []seedResult{r}, replay, r.Wall)))
	}
	return errors.Join(errs...)
}

// reportRun prints how a single run ended, and returns the exit code.
func reportRun(out runOutcome, stdout, stderr io.Writer) int {
	if out.interrupted {
		if out.closeErr == nil {
			fmt.Fprintln(stderr, "csisim: interrupted; the cluster was torn down")
		} else {
			fmt.Fprintln(stderr, "csisim: interrupted; tearing the cluster down left something behind (below)")
			fmt.Fprintf(stderr, "csisim: cleaning up: %v\n", out.closeErr)
		}
		return 130
	}
	code := 0
	if f := out.runFailure(); f != nil {
		fmt.Fprint(stderr, f.Detail)
		code = 1
	} else if out.result.Skipped != "" {
		fmt.Fprintf(stdout, "\nSKIPPED: %s\n", out.result.Skipped)
	} else if known := out.result.Invariants; known != nil && len(known.KnownUpstream) > 0 {
		// Not a failure, and not to be missed: a verdict of its own, with
		// each violation and its entries (docs: scenarios/README.md#invariants).
		fmt.Fprintf(stdout, "\nKNOWN UPSTREAM: %d steps, %s of cluster time in %s%s — not a failure: Kubernetes left it so, not the driver\n%s\n",
			len(out.result.Steps), out.result.Duration.Round(time.Millisecond), out.wall.Round(time.Millisecond),
			invariantSummary(out.result.Invariants), scenarios.KnownReport(known.KnownUpstream, out.entries))
	} else {
		fmt.Fprintf(stdout, "\nPASSED: %d steps, %s of cluster time in %s%s\n", len(out.result.Steps), out.result.Duration.Round(time.Millisecond),
			out.wall.Round(time.Millisecond), invariantSummary(out.result.Invariants))
	}
	if out.closeErr != nil {
		fmt.Fprintf(stderr, "csisim: cleaning up: %v\n", out.closeErr)
		code = 1
	}
	return code
}

// startFailed reports a cluster that did not start: exit 130 if the user
// interrupted the start-up, else 1. Either way the start tore down what it
// had made; whether all of it went is in err (a *runroot.LeftBehind).
func startFailed(ctx context.Context, what string, err error, stderr io.Writer) int {
	var left *runroot.LeftBehind
	if ctx.Err() != nil {
		if errors.As(err, &left) {
			fmt.Fprintf(stderr, "csisim: interrupted while starting %s; tearing it down left something behind: %v\n", what, left)
		} else {
			fmt.Fprintf(stderr, "csisim: interrupted while starting %s; it was torn down\n", what)
		}
		return 130
	}
	fmt.Fprintf(stderr, "csisim: starting %s: %v\n", what, err)
	return 1
}

// problems are what went wrong in backend b that no step asked for (a
// driver that died), if it can tell.
func problems(b runBackend) []string {
	if ps, ok := b.(scenarios.ProblemSource); ok {
		return ps.Problems()
	}
	return nil
}

// invariantSummary ends the PASSED line: "; 7 invariants held", or with the
// violations the scenario expects, how many of them occurred, and those a
// known upstream bug caused: "1 violated by a known Kubernetes bug
// (kubernetes#121937: csi-call-order)".
func invariantSummary(ir *scenarios.InvariantResult) string {
	if ir == nil {
		return ""
	}
	// A violated invariant the scenario expects is never sorted as known.
	known, upstream := map[string]bool{}, map[string]bool{}
	for _, v := range ir.KnownUpstream {
		known[v.Invariant], upstream[v.KnownUpstream] = true, true
	}
	expected := map[string]bool{}
	for _, v := range ir.Violations {
		if !known[v.Invariant] {
			expected[v.Invariant] = true
		}
	}
	s := fmt.Sprintf("; %d invariants held", ir.Checked-len(expected)-len(known))
	if len(expected) > 0 {
		s += fmt.Sprintf(", %d violated as the scenario expects", len(expected))
	}
	if len(known) > 0 {
		s += fmt.Sprintf(", %d violated by a known Kubernetes bug (%s: %s)", len(known),
			strings.Join(slices.Sorted(maps.Keys(upstream)), ", "), strings.Join(slices.Sorted(maps.Keys(known)), ", "))
	}
	return s
}

// runBackend is a cluster `csisim run` can run a scenario on.
type runBackend interface {
	scenarios.Backend
	Recorder() *trace.Recorder
	Close() error
}

// writeTrace writes the canonical timeline, one entry a line.
func writeTrace(path string, entries []trace.Entry, root string) error {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Canonical())
		b.WriteByte('\n')
	}
	text := b.String()
	if root != "" {
		// The run's temporary directory differs from run to run; written
		// as {root} (as the timeline formats write it), a seed gives the
		// same bytes.
		text = strings.ReplaceAll(text, root, trace.RootWord)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing the trace: %w", err)
	}
	return nil
}

// runNemesis is a single run under --nemesis (nemesis.go), with the
// timeline printed unless quiet and the drivers' output in --driver-log.
func (c *runCmd) runNemesis(ctx context.Context, sc *scenarios.Scenario, cfg cluster.Config) int {
	if !c.quiet {
		cfg.OnEntry = newStartupPrinter(c.stdout, c.timeline.startup).entry
	}
	if c.driverLog != "" {
		f, err := os.Create(c.driverLog)
		if err != nil {
			fmt.Fprintf(c.stderr, "csisim: %v\n", err)
			return 2
		}
		defer f.Close()
		cfg.DriverLog = f
	}
	start := time.Now()
	code := c.nem.run(ctx, c.fs, sc, cfg, c.traceFile, c.stdout, c.stderr)
	if c.jsonResult != "" {
		// A sweep under --nemesis runs each seed with --json-result.
		r := seedResult{Seed: c.seed, Steps: "nemesis", ClusterTime: c.nem.clusterTime, Wall: time.Since(start),
			Interrupted: code == 130, Failure: c.nem.failed, KnownUpstream: c.nem.known}
		if code != 0 && code != 130 && r.Failure == nil {
			r.Failure = &failure{Kind: "error", Cause: "exit", Summary: fmt.Sprintf("the nemesis run exited %d", code)}
		}
		if err := writeSeedResult(c.jsonResult, r); err != nil {
			fmt.Fprintf(c.stderr, "csisim: %v\n", err)
			return max(code, 1)
		}
	}
	return code
}
