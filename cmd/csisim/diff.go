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
// when they do not, 1 when they do (or a cluster could not run), 2 for a
// usage error or a malformed scenario.
func diffScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "the simulator's seed")
	asJSON := fs.Bool("json", false, "write the report as JSON, snapshots included")
	logFile := fs.String("log", "", "write every process's output (drivers, control plane, sidecars) to this file")
	var realNodes realNodesFlag
	fs.Var(&realNodes, "real-nodes", realNodesUsage)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim diff [flags] SCENARIO.yaml\n\n"+
			"Runs the scenario on the simulator and on a real control plane (make realkube-bins) with\n"+
			"csisim's simulated kubelets, and reports how the objects, their events and the CSI calls\n"+
			"differ after each step. Exit status 0: no differences, 1: differences, 2: usage.\n\nFlags:\n")
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
	if !rep.Identical() {
		return 1
	}
	return 0
}
