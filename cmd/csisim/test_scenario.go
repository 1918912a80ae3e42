package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/sanityrun"
	scenario "github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
)

// testScenarioMain is `csisim test-scenario`, the child of `csisim test`
// that runs one scenario on the simulator with the driver of a profile and
// writes how it went (--json-result), as the child of a seed sweep does.
// It is not in the usage text: `csisim test --focus` runs one scenario.
func testScenarioMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim test-scenario", flag.ContinueOnError)
	fs.SetOutput(stderr)
	driver := fs.String("driver", "", "the driver profile")
	seed := fs.Uint64("seed", 1, "the seed")
	built := fs.String("built", "", "the driver binary built from the profile's start.build")
	jsonResult := fs.String("json-result", "", "write how the run ended to this file as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *driver == "" || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "Usage: csisim test-scenario --driver PROFILE [--seed N] [--built BINARY] [--json-result FILE] SCENARIO.yaml")
		return 2
	}
	p, err := loadProfile(*driver)
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := runWithProfile(ctx, p, fs.Arg(0), *built, *seed)
	code := reportRun(out, stdout, stderr)
	if *jsonResult != "" {
		if err := writeSeedResult(*jsonResult, out.seedResult()); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			code = max(code, 1)
		}
	}
	return code
}

// runWithProfile runs the scenario in file on a simulated cluster of its
// own with the driver of profile p, and tears the cluster down.
func runWithProfile(ctx context.Context, p *profile.Profile, file, built string, seed uint64) runOutcome {
	sc, err := scenario.Load(file)
	if err != nil {
		return runOutcome{seed: seed, startErr: err}
	}
	cfg, err := clusterFor(p, sc, built)
	if err != nil {
		return runOutcome{seed: seed, startErr: err}
	}
	cfg.Seed = seed
	starting := time.Now()
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		return runOutcome{seed: seed, startErr: &startError{what: "the simulated cluster", err: err}, wall: time.Since(starting),
			interrupted: ctx.Err() != nil}
	}
	runner := &scenario.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Profile: p}
	wallStart := time.Now()
	res, runErr := runner.Run(ctx, sc)
	out := runOutcome{seed: seed, result: res, runErr: runErr, wall: time.Since(wallStart)}
	out.closeErr = c.Close()
	out.problems = problems(c)
	out.interrupted = ctx.Err() != nil
	if res != nil && res.Skipped != "" && runErr == nil {
		// `csisim test` asks SkipReason before it starts a child, so a
		// skip here means the two disagree: say so rather than pass.
		out.runErr = fmt.Errorf("the runner skipped the scenario, which csisim test meant to run: %s", res.Skipped)
	}
	return out
}

// clusterFor is the simulated cluster for scenario sc with the driver of
// profile p, built from today's cluster.Config: the in-process mock,
// csisim's own driver with the profile's flags for the scenario, or a
// combined driver's command as the template of every plugin.
//
// TODO(h-profiles): cluster.Config learns profiles (layouts, per-node
// flags); this function is the one place to switch to it.
func clusterFor(p *profile.Profile, sc *scenario.Scenario, built string) (cluster.Config, error) {
	cfg := cluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones, DriverName: p.Name}
	switch {
	case p.Start.Mock:
		cfg.Mock = true
	case isCsisimDriver(p.Start.Controller) && isCsisimDriver(p.Start.Node):
		// The cluster starts csisim's own driver itself, adding --zone to
		// the node plugins of zoned nodes as the profile's flags.zone does.
		cfg.DriverArgs = sc.Cluster.DriverFlags(p)
	case p.Start.Layout == profile.Combined:
		exe, err := os.Executable()
		if err != nil {
			return cfg, fmt.Errorf("finding the csisim binary for {csisim}: %w", err)
		}
		t, err := sanityrun.Template(p.Start.Command, exe, built, p.Name)
		if err != nil {
			return cfg, fmt.Errorf("driver profile %s: start.command: %w", p.File, err)
		}
		t.Args = append(t.Args, sc.Cluster.DriverFlags(p)...)
		if len(sc.Cluster.Zones) > 0 && len(p.Flags.Zone) > 0 {
			return cfg, fmt.Errorf("driver profile %s: zones need flags.zone per node plugin, which this csisim cannot add to a combined driver yet", p.File)
		}
		cfg.Driver = t
	default:
		return cfg, fmt.Errorf("driver profile %s: a split driver other than csisim's own cannot start in the simulator yet", p.File)
	}
	return cfg, nil
}

// isCsisimDriver says whether c runs csisim's own driver (`{csisim} driver`).
func isCsisimDriver(c *profile.Command) bool {
	return c != nil && c.Path == "{csisim}" && len(c.Args) > 0 && c.Args[0] == "driver"
}
