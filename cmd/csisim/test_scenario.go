package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
)

func testScenarioCommand() *command {
	return &command{
		name:    "test-scenario",
		summary: "run one scenario with a driver profile for csisim test",
		usage:   []string{"csisim test-scenario --driver PROFILE [--seed N] [--json-result FILE] SCENARIO.yaml"},
		hidden:  true, minArgs: 1, maxArgs: 1, signals: true,
		new: func() subcommand { return &testScenarioCmd{} },
	}
}

// testScenarioCmd is `csisim test-scenario`, the child of `csisim test`
// that runs one scenario on the simulator with the driver of a profile
// and writes how it went (--json-result), as the child of a seed sweep
// does. It is not in the usage text: `csisim test --focus` runs one
// scenario.
type testScenarioCmd struct {
	invocation
	driver     string
	seed       uint64
	jsonResult string
}

func (c *testScenarioCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.driver, "driver", "", "the driver profile")
	fs.Uint64Var(&c.seed, "seed", 1, "the seed")
	fs.StringVar(&c.jsonResult, "json-result", "", "write how the run ended to this file as JSON")
}

func (c *testScenarioCmd) Run(ctx context.Context) error {
	if c.driver == "" {
		return errShowUsage
	}
	p, err := profiles.Load(c.driver)
	if err != nil {
		return usageError(err)
	}
	out := runWithProfile(ctx, p, c.args[0], c.seed)
	code := reportRun(out, c.stdout, c.stderr)
	if c.jsonResult != "" {
		if err := writeSeedResult(c.jsonResult, out.seedResult()); err != nil {
			fmt.Fprintf(c.stderr, "csisim: %v\n", err)
			code = max(code, 1)
		}
	}
	return exitStatus(code)
}

// runWithProfile runs the scenario in file on a simulated cluster of its
// own with the driver of profile p, and tears the cluster down.
func runWithProfile(ctx context.Context, p *profile.Profile, file string, seed uint64) runOutcome {
	sc, err := scenarios.Load(file)
	if err != nil {
		return runOutcome{seed: seed, startErr: err}
	}
	cfg, err := clusterprofile.Config(ctx, p, sc.Cluster.Request(), clusterprofile.Options{DriverName: sc.Cluster.DriverName})
	if err == nil {
		err = clusterprofile.AddDrivers(ctx, &cfg, sc.Drivers, sc.Cluster.Request(), clusterprofile.Options{})
	}
	if err == nil && sc.Cluster.Deploy != "" {
		err = clusterprofile.Deploy(&cfg, p, sc.Cluster.Deploy, io.Discard)
	}
	cfg.Timing = sc.Cluster.Timing
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
	if sc.Cluster.Deploy != "" {
		// A driver whose profile cannot run the scenario's manifests.
		if err := clusterprofile.Deploy(&cluster.Config{}, p, sc.Cluster.Deploy, io.Discard); err != nil {
			return err.Error()
		}
	}
	return ""
}
