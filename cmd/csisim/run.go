package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/realcluster"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// runScenario is `csisim run`: start a simulated cluster, run one scenario
// on it with the timeline printed as it happens, and tear everything down,
// also when interrupted.
func runScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "seed for UIDs and generated names; the same seed gives the same names")
	driverLog := fs.String("driver-log", "", "write the CSI driver processes' output to this file; {seed} in the name stands for the seed\n"+
		"(with --seeds, the name needs it; with --backend realkube: every process's, the control plane's and sidecars' too)")
	quiet := fs.Bool("quiet", false, "print only the result, not the timeline")
	driverCommand := fs.String("driver-command", "", "run this CSI driver instead of csisim's own, for the controller and every node:\n"+
		"a command line whose words may contain {endpoint}, {nodeID}, {stateDir} and {root}, e.g.\n"+
		"'/usr/bin/hostpathplugin --endpoint={endpoint} --nodeid={nodeID} --statedir={stateDir}' (no shell quoting)")
	driverName := fs.String("driver-name", "", "the name the driver reports (default: the scenario's cluster.driverName, else hostpath.csisim.io)")
	mockDriver := fs.Bool("mock-driver", false, "use the in-memory mock CSI driver (no mounts, no root needed); the same as --driver mock")
	driverProfile := fs.String("driver", "", driverUsage)
	traceFile := fs.String("trace", "", "also write the timeline to this file, without wall-clock durations:\n"+
		"two runs with the same seed and scenario write the same file; {seed} in the name stands for the seed\n"+
		"(with --seeds, the name needs it: each seed writes its own file)")
	backend := fs.String("backend", "sim", "where to run: sim, the simulator, or realkube, a real control plane (make realkube-bins)\n"+
		"with csisim's simulated kubelets joining it; realkube runs on wall time and ignores --seed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	seeds := fs.String("seeds", "", seedsUsage)
	parallel := fs.Int("parallel", 1, "with --seeds, how many seeds run at once, each in a csisim process and on a cluster of its own\n"+
		"(the output and each seed's result are the same whatever it is)")
	shardSpec := fs.String("shard", "", shardUsage)
	jsonResult := fs.String("json-result", "", "write how the run ended to this file as JSON (a sweep runs each seed with it)")
	junitFile := fs.String("junit", "", "write a JUnit XML report to this file: one test case per seed, a failing one\n"+
		"with its first failure and the command that replays it")
	var realNodes realNodesFlag
	fs.Var(&realNodes, "real-nodes", realNodesUsage)
	nem := addNemesisFlags(fs)
	var explainAt explainFlag
	fs.StringVar(&explainAt.target, "explain", "", explainUsage)
	timeline := addTimelineFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim run [flags] SCENARIO.yaml\n"+
			"       csisim run --seeds A..B [--parallel P] [--shard i/n] [--junit FILE] [flags] SCENARIO.yaml\n\n"+
			"The second form runs the scenario once per seed and prints one line per seed, a failing\n"+
			"seed's first failure and the command that replays it alone; it exits 1 if any seed failed.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	switch {
	case *backend != "sim" && *backend != "realkube":
		fmt.Fprintf(stderr, "csisim: --backend %q: the backends are sim and realkube\n", *backend)
		return 2
	case realNodes.set() && *backend != "realkube":
		fmt.Fprintln(stderr, "csisim: --real-nodes joins real kubelets to the real control plane; add --backend realkube")
		return 2
	case *backend == "realkube" && (*mockDriver || *driverCommand != "" || *driverProfile != ""):
		fmt.Fprintln(stderr, "csisim: --backend realkube runs csisim's own driver; --driver, --mock-driver and --driver-command are for the simulator")
		return 2
	}
	sweepSeeds, sweepShard, err := sweepFlags(fs, *seeds, *shardSpec, *backend, *traceFile, *driverLog, *parallel)
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	if err := explainAt.check(); err != nil {
		fmt.Fprintf(stderr, "csisim: --explain: %v\n", err)
		return 2
	}
	if err := nem.check(*backend); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	if err := timeline.check(sweepSeeds != nil, nem.on, *quiet); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	sc, err := scenarios.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	realNodeNames, err := realNodes.resolve(sc.Cluster.Nodes)
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	// Whichever flag names the driver, a profile starts it (driverprofile.go).
	drv := driverChoice{profile: *driverProfile, mock: *mockDriver, command: *driverCommand, name: *driverName}
	cfg, prof, err := drv.clusterConfig(context.Background(), sc.Cluster.Request(), sc.Cluster.DriverName, stderr)
	flags := seedFlags(fs)
	replay := replayCommand(flags, fs.Arg(0))
	skipped := skippedRun{seed: *seed, file: fs.Arg(0), jsonResult: *jsonResult, junitFile: *junitFile, replay: replay}
	var unsupported *profile.Unsupported
	if errors.As(err, &unsupported) && *backend == "sim" {
		return reportSkipped(sc, unsupported.Reason, skipped, stdout, stderr)
	}
	if err != nil && *backend == "sim" {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	if prof != nil {
		// ${driver.name} is the name the driver runs under.
		prof.Name = cfg.DriverName
		if why := sc.SkipReason(prof); why != "" {
			if *driverCommand != "" {
				why += " (--driver-command declares nothing the driver cannot report of itself; a driver profile does: README, Bring your own driver)"
			}
			return reportSkipped(sc, why, skipped, stdout, stderr)
		}
	}

	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 2
		}
		defer stopProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sweepDeadRuns(stderr)

	if sweepSeeds != nil {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "csisim: finding the csisim binary to run each seed with: %v\n", err)
			return 1
		}
		child := childRun{binary: exe, args: childArgs(flags, *traceFile, *driverLog), file: fs.Arg(0), stopGrace: time.Minute}
		return runSweep(ctx, sweep{run: child.runSeed, scenario: sc.Name, file: fs.Arg(0), seedsSpec: *seeds, shard: sweepShard,
			seeds: sweepShard.pick(sweepSeeds), parallel: *parallel, junitFile: *junitFile, replay: replay}, stdout, stderr)
	}

	if nem.on {
		cfg.Seed = *seed
		return runNemesis(ctx, nem, fs, sc, cfg, *quiet, *traceFile, *driverLog, stdout, stderr)
	}
	sim := simRun{file: fs.Arg(0), cluster: cfg, traceFile: *traceFile, driverLog: *driverLog, profile: prof}
	if !*quiet {
		sim.cluster.OnEntry = timeline.onEntry(stdout)
	}
	sim.cluster.OnEntry = explainAt.observe(sim.cluster.OnEntry)
	info := timeline.info(stdout, stderr)
	title := fmt.Sprintf("scenario %s, seed %d", sc.Name, *seed)
	var out runOutcome
	if *backend == "realkube" {
		title = fmt.Sprintf("scenario %s, real control plane %s", sc.Name, realkube.KubeVersion)
		fmt.Fprintf(info, "scenario %s (%s), real control plane %s%s\n", sc.Name, sc.File, realkube.KubeVersion, realNodesNote(realNodeNames))
		out = runOnRealkube(ctx, realcluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, DriverArgs: sc.Cluster.DriverArgs, RealNodes: realNodeNames,
			DriverName: realkubeDriverName(sc, *driverName), OnEntry: sim.cluster.OnEntry}, sc, withSeed(*driverLog, *seed), withSeed(*traceFile, *seed))
	} else {
		fmt.Fprintf(info, "scenario %s (%s), seed %d\n", sc.Name, sc.File, *seed)
		out = sim.runSeed(ctx, *seed)
	}
	out.seed = *seed
	var code int
	var notStarted *startError
	if errors.As(out.startErr, &notStarted) {
		code = startFailed(ctx, notStarted.what, notStarted.err, stderr)
	} else {
		if err := timeline.finish(out, title, stdout); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			code = 1
		}
		code = max(code, reportRun(out, info, stderr))
		explainAt.print(sc, out, info, stderr)
	}
	// Also a run that did not start has a result, for the sweep that
	// runs it.
	if err := writeResults(out.seedResult(), sc.Name, fs.Arg(0), *jsonResult, *junitFile, replay); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
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
// violations the scenario expects, how many of them occurred.
func invariantSummary(ir *scenarios.InvariantResult) string {
	if ir == nil {
		return ""
	}
	violated := map[string]bool{}
	for _, v := range ir.Violations {
		violated[v.Invariant] = true
	}
	if len(violated) == 0 {
		return fmt.Sprintf("; %d invariants held", ir.Checked)
	}
	return fmt.Sprintf("; %d invariants held, %d violated as the scenario expects", ir.Checked-len(violated), len(violated))
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
// timeline printed unless quiet and the drivers' output in driverLog.
func runNemesis(ctx context.Context, nem *nemesisFlags, fs *flag.FlagSet, sc *scenarios.Scenario, cfg cluster.Config,
	quiet bool, traceFile, driverLog string, stdout, stderr io.Writer) int {
	if !quiet {
		cfg.OnEntry = func(e trace.Entry) { fmt.Fprintln(stdout, e.String()) }
	}
	if driverLog != "" {
		f, err := os.Create(driverLog)
		if err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 2
		}
		defer f.Close()
		cfg.DriverLog = f
	}
	return nem.run(ctx, fs, sc, cfg, traceFile, stdout, stderr)
}
