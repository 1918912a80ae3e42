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

	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/realcluster"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/runroot"
	scenario "github.com/csisim/csisim/scenarios"
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
	driverLog := fs.String("driver-log", "", "write the CSI driver processes' output to this file\n"+
		"(with --backend realkube: every process's, the control plane's and sidecars' too)")
	quiet := fs.Bool("quiet", false, "print only the result, not the timeline")
	driverCommand := fs.String("driver-command", "", "run this CSI driver instead of csisim's own, for the controller and every node:\n"+
		"a command line whose words may contain {endpoint}, {nodeID}, {stateDir} and {root}, e.g.\n"+
		"'/usr/bin/hostpathplugin --endpoint={endpoint} --nodeid={nodeID} --statedir={stateDir}' (no shell quoting)")
	driverName := fs.String("driver-name", "", "the name the driver reports (default hostpath.csisim.io)")
	mockDriver := fs.Bool("mock-driver", false, "use the in-memory mock CSI driver (no mounts, no root needed)")
	traceFile := fs.String("trace", "", "also write the timeline to this file, without wall-clock durations:\n"+
		"two runs with the same seed and scenario write the same file")
	backend := fs.String("backend", "sim", "where to run: sim, the simulator, or realkube, a real control plane (make realkube-bins)\n"+
		"with csisim's simulated kubelets joining it; realkube runs on wall time and ignores --seed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	var realNodes realNodesFlag
	fs.Var(&realNodes, "real-nodes", realNodesUsage)
	nem := addNemesisFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim run [flags] SCENARIO.yaml\n\nFlags:\n")
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
	case *backend == "realkube" && (*mockDriver || *driverCommand != ""):
		fmt.Fprintln(stderr, "csisim: --backend realkube runs csisim's own driver; --mock-driver and --driver-command are for the simulator")
		return 2
	}
	if err := nem.check(*backend); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	sc, err := scenario.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	realNodeNames, err := realNodes.resolve(sc.Cluster.Nodes)
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
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

	cfg := cluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, DriverArgs: sc.Cluster.DriverArgs, Seed: *seed, DriverName: *driverName, Mock: *mockDriver}
	if !*quiet {
		cfg.OnEntry = func(e trace.Entry) { fmt.Fprintln(stdout, e.String()) }
	}
	if *driverCommand != "" {
		words := strings.Fields(*driverCommand)
		cfg.Driver = launch.Template{Path: words[0], Args: words[1:]}
		if _, err := cfg.Driver.Expand(launch.Vars{Endpoint: "unix:///x", NodeID: "x", StateDir: "/x", Root: "/x"}); err != nil {
			fmt.Fprintf(stderr, "csisim: --driver-command: %v\n", err)
			return 2
		}
	}
	if *driverLog != "" {
		f, err := os.Create(*driverLog)
		if err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 2
		}
		defer f.Close()
		cfg.DriverLog = f
	}
	if nem.on {
		return nem.run(ctx, fs, sc, cfg, *traceFile, stdout, stderr)
	}
	var (
		c        runBackend
		runClock clock.WithTicker // nil: wall time
	)
	if *backend == "realkube" {
		fmt.Fprintf(stdout, "scenario %s (%s), real control plane %s%s\n", sc.Name, sc.File, realkube.KubeVersion, realNodesNote(realNodeNames))
		rc, err := realcluster.Start(ctx, realcluster.Config{Nodes: cfg.Nodes, Zones: cfg.Zones, DriverArgs: cfg.DriverArgs, RealNodes: realNodeNames,
			DriverName: cfg.DriverName, OnEntry: cfg.OnEntry, Log: cfg.DriverLog})
		if err != nil {
			return startFailed(ctx, "the real control plane", err, stderr)
		}
		c = rc
	} else {
		fmt.Fprintf(stdout, "scenario %s (%s), seed %d\n", sc.Name, sc.File, *seed)
		simc, err := cluster.Start(ctx, cfg)
		if err != nil {
			return startFailed(ctx, "the simulated cluster", err, stderr)
		}
		c, runClock = simc, simc.Clock()
	}
	runner := &scenario.Runner{Backend: c, Recorder: c.Recorder(), Clock: runClock}
	wallStart := time.Now()
	res, runErr := runner.Run(ctx, sc)
	wall := time.Since(wallStart)
	closeErr := c.Close()
	if *traceFile != "" {
		if err := writeTrace(*traceFile, c.Recorder().Entries()); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			closeErr = errors.Join(closeErr, err)
		}
	}

	code := 0
	var stepErr *scenario.StepError
	var invErr *scenario.InvariantError
	switch {
	case ctx.Err() != nil:
		if closeErr == nil {
			fmt.Fprintln(stderr, "csisim: interrupted; the cluster was torn down")
		} else {
			fmt.Fprintln(stderr, "csisim: interrupted; tearing the cluster down left something behind (below)")
		}
		code = 130
	case errors.As(runErr, &stepErr):
		fmt.Fprintf(stderr, "\nFAILED: %v\n", stepErr)
		if stepErr.Expected != "" || stepErr.Observed != "" {
			fmt.Fprintf(stderr, "  expected: %s\n  observed: %s\n", stepErr.Expected, stepErr.Observed)
		}
		code = 1
	case errors.As(runErr, &invErr):
		fmt.Fprintf(stderr, "\n%v\nFAILED: %d steps passed, but the run breaks its invariants\n", invErr, len(res.Steps))
		code = 1
	case runErr != nil:
		fmt.Fprintf(stderr, "csisim: %v\n", runErr)
		code = 1
	case len(problems(c)) > 0:
		// Every step passed, but a driver died on its own meanwhile: not
		// a verdict to trust.
		for _, p := range problems(c) {
			fmt.Fprintf(stderr, "\nFAILED: every step passed, but %s\n", p)
		}
		code = 1
	default:
		fmt.Fprintf(stdout, "\nPASSED: %d steps, %s of cluster time in %s%s\n", len(res.Steps), res.Duration.Round(time.Millisecond), wall.Round(time.Millisecond),
			invariantSummary(res.Invariants))
	}
	if closeErr != nil {
		fmt.Fprintf(stderr, "csisim: cleaning up: %v\n", closeErr)
		if code == 0 {
			code = 1
		}
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
	if ps, ok := b.(scenario.ProblemSource); ok {
		return ps.Problems()
	}
	return nil
}

// invariantSummary ends the PASSED line: "; 7 invariants held", or with the
// violations the scenario expects, how many of them occurred.
func invariantSummary(ir *scenario.InvariantResult) string {
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
	scenario.Backend
	Recorder() *trace.Recorder
	Close() error
}

// writeTrace writes the canonical timeline, one entry a line.
func writeTrace(path string, entries []trace.Entry) error {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Canonical())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the trace: %w", err)
	}
	return nil
}
