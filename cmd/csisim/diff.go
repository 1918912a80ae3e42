package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/csisim/csisim/diff"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/timing"
)

func diffCommand() *command {
	return &command{
		name:    "diff",
		summary: "run a scenario on the simulator and on a real control plane and report the differences",
		usage:   []string{"csisim diff [flags] SCENARIO.yaml"},
		about: "Runs the scenario on the simulator and on a real control plane (make realkube-bins) with\n" +
			"csisim's simulated kubelets, each as csisim run would, and reports how the objects, their\n" +
			"events and the CSI calls differ at the end of each step. Differences only in when things\n" +
			"happened (a retry count, a backoff on the other side of a step's end, the order of two\n" +
			"nodes' calls) are listed apart, under timing. Each difference in behaviour is matched\n" +
			"against the scenario's fidelity: section and marked explained (quoting its why) or\n" +
			"unexplained; entries that match none are listed as stale.\n" +
			"Exit status 0: no differences but in timing or explained ones, 1: unexplained differences\n" +
			"in behaviour (with --strict, also in timing, or a stale entry), a run that stopped early,\n" +
			"or a cluster that could not run; 2: usage.",
		minArgs: 1, maxArgs: 1, signals: true,
		new: func() subcommand { return &diffCmd{} },
	}
}

// diffCmd is `csisim diff`: run one scenario on the simulator and on a
// real control plane and report where they differ, step by step. Exit 0
// when they differ only in timing (or not at all), 1 when they differ in
// behaviour, a run stopped early or a cluster could not run (with
// --strict, also when they differ in timing), 2 for a usage error or a
// malformed scenario.
type diffCmd struct {
	invocation
	seed      uint64
	asJSON    bool
	strict    bool
	logFile   string
	realNodes realNodesFlag
	driver    string
	speedup   int
}

func (c *diffCmd) flags(fs *flag.FlagSet) {
	fs.Uint64Var(&c.seed, "seed", 1, "the simulator's seed")
	fs.BoolVar(&c.asJSON, "json", false, "write the report as JSON, snapshots included")
	fs.BoolVar(&c.strict, "strict", false, "exit 1 also for differences only in timing")
	fs.StringVar(&c.logFile, "log", "", "write every process's output (drivers, control plane, sidecars) to this file")
	fs.Var(&c.realNodes, "real-nodes", realNodesUsage)
	fs.IntVar(&c.speedup, "speedup", 0, fmt.Sprintf("run the scenario's node-loss timing this many times faster on both sides (2 to %d): the node lifecycle controller's grace and monitor periods, "+
		"the pods' default toleration of a lost node, the attach/detach controller's wait for unmount and the kubelets' heartbeats, and with them the scenario's sleeps "+
		"(docs/fidelity.md, \"Node loss in minutes\")", timing.MaxSpeedup))
	fs.StringVar(&c.driver, "driver", "", "the driver profile both sides run, by name or file: csisim's own driver as it is (default) or with flags of the profile's (csisim-file: no attach, no stage); other drivers cannot run on the real control plane")
}

func (c *diffCmd) Run(ctx context.Context) error {
	sc, err := scenarios.Load(c.args[0])
	if err != nil {
		return usageError(err)
	}
	if err := diff.CheckExplanations(sc.Fidelity); err != nil {
		return usageError(err)
	}
	if c.speedup != 0 {
		if c.speedup < 2 {
			return usagef("--speedup %d: want 2 to %d (leave it out for v1.37's timing)", c.speedup, timing.MaxSpeedup)
		}
		if sc, err = sc.SpeedUp(c.speedup); err != nil {
			return usagef("--speedup: %v", err)
		}
	}
	opts := diff.Options{Seed: c.seed, Progress: c.stderr}
	if c.driver != "" {
		if opts.Profile, err = profiles.Load(c.driver); err != nil {
			return usageError(err)
		}
		if _, err := opts.Profile.OwnDriverArgs(); err != nil {
			return usagef("--driver %s: %v: the real control plane runs csisim's own driver", c.driver, err)
		}
		p := *opts.Profile
		p.Name = cmp.Or(sc.Cluster.DriverName, p.Name)
		if why := sc.SkipReason(&p); why != "" {
			return usagef("--driver %s: %s is not diffed: %s", c.driver, sc.Name, why)
		}
	}
	if opts.RealNodes, err = c.realNodes.resolve(sc.Cluster.Nodes); err != nil {
		return usageError(err)
	}
	if len(opts.RealNodes) > 0 && len(sc.Cluster.Nodes) == 0 {
		sc.Cluster.Nodes = opts.RealNodes
	}
	if c.logFile != "" {
		f, err := os.Create(c.logFile)
		if err != nil {
			return usageError(err)
		}
		defer f.Close()
		opts.ComponentLog = f
	}
	rep, err := diff.Run(ctx, sc, opts)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(c.stderr, "csisim: interrupted; the clusters were torn down")
		return errInterrupted
	case err != nil:
		return err
	}
	if c.asJSON {
		err = rep.WriteJSON(c.stdout)
	} else {
		err = rep.WriteText(c.stdout)
	}
	if err != nil {
		return err
	}
	if !rep.Agree(c.strict) {
		return errFailed
	}
	return nil
}
