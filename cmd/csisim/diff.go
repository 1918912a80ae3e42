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

	"github.com/csisim/csisim/diff"
	"github.com/csisim/csisim/scenarios"
)

// diffScenario is `csisim diff`: run one scenario on the simulator and on a
// real control plane and report where they differ, step by step. Exit 0
// when they differ only in timing (or not at all), 1 when they differ in
// behaviour, a run stopped early or a cluster could not run (with
// --strict, also when they differ in timing), 2 for a usage error or a
// malformed scenario.
func diffScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "the simulator's seed")
	asJSON := fs.Bool("json", false, "write the report as JSON, snapshots included")
	strict := fs.Bool("strict", false, "exit 1 also for differences only in timing")
	logFile := fs.String("log", "", "write every process's output (drivers, control plane, sidecars) to this file")
	var realNodes realNodesFlag
	fs.Var(&realNodes, "real-nodes", realNodesUsage)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim diff [flags] SCENARIO.yaml\n\n"+
			"Runs the scenario on the simulator and on a real control plane (make realkube-bins) with\n"+
			"csisim's simulated kubelets, each as csisim run would, and reports how the objects, their\n"+
			"events and the CSI calls differ at the end of each step. Differences only in when things\n"+
			"happened (a retry count, a backoff on the other side of a step's end, the order of two\n"+
			"nodes' calls) are listed apart, under timing.\n"+
			"Exit status 0: no differences but in timing, 1: differences in behaviour (with --strict,\n"+
			"also in timing), a run that stopped early, or a cluster that could not run; 2: usage.\n\nFlags:\n")
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
	sc, err := scenarios.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	opts := diff.Options{Seed: *seed, Progress: stderr}
	if opts.RealNodes, err = realNodes.resolve(sc.Cluster.Nodes); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	if len(opts.RealNodes) > 0 && len(sc.Cluster.Nodes) == 0 {
		sc.Cluster.Nodes = opts.RealNodes
	}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			return 2
		}
		defer f.Close()
		opts.ComponentLog = f
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := diff.Run(ctx, sc, opts)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "csisim: interrupted; the clusters were torn down")
		return 130
	case err != nil:
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 1
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 1
	}
	if !rep.Agree(*strict) {
		return 1
	}
	return 0
}
