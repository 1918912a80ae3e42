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
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
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
	jsonResult := fs.String("json-result", "", "write how the run ended to this file as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *driver == "" || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "Usage: csisim test-scenario --driver PROFILE [--seed N] [--json-result FILE] SCENARIO.yaml")
		return 2
	}
	p, err := profiles.Load(*driver)
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out := runWithProfile(ctx, p, fs.Arg(0), *seed)
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
func runWithProfile(ctx context.Context, p *profile.Profile, file string, seed uint64) runOutcome {
	sc, err := scenarios.Load(file)
	if err != nil {
		return runOutcome{seed: seed, startErr: err}
	}
	cfg, err := clusterprofile.Config(ctx, p, sc.Cluster.Request(), clusterprofile.Options{DriverName: sc.Cluster.DriverName})
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
	runner := &scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Profile: p}
	wallStart := time.Now()
	res, runErr := runner.Run(ctx, sc)
	out := runOutcome{seed: seed, result: res, runErr: runErr, wall: time.Since(wallStart)}
	out.closeErr = c.Close()
	out.problems = problems(c)
	out.interrupted = ctx.Err() != nil
	// A skip here is the driver's answer at the start, which `csisim
	// test` could not know: it is reported as a skip (seedResult).
	return out
}

// skipReason says why scenario sc does not run with the driver of profile
// p, or "" if it does: what the scenario runner says (a capability the
// scenario needs that the profile lacks, a driver variable it does not
// set…), else what the profile cannot carry out of the scenario's
// cluster (profile.Check).
func skipReason(p *profile.Profile, sc *scenarios.Scenario) string {
	if why := sc.SkipReason(p); why != "" {
		return why
	}
	var unsupported *profile.Unsupported
	if err := p.Check(sc.Cluster.Request()); errors.As(err, &unsupported) {
		return unsupported.Reason
	}
	return ""
}
