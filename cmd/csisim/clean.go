package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/runroot"
)

// clean is `csisim clean`: tear down what dead runs (SIGKILLed, crashed)
// left in the temporary directory — their driver processes, loop devices,
// mounts and run roots — and say what went. Live runs are not touched.
func clean(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim clean", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dryRun := fs.Bool("dry-run", false, "only say what would be removed")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim clean [--dry-run]\n\nRemoves what dead csisim runs left in %s: driver processes, loop devices, mounts, run roots.\nRuns still alive are not touched.\n\nFlags:\n", os.TempDir())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	swept, err := runroot.SweepWith(*dryRun, restoreHost)
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	for _, t := range swept {
		fmt.Fprintf(stdout, "csisim clean: %s %s\n", verb, t)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csisim clean: %v\n", err)
		return 1
	}
	if len(swept) == 0 {
		fmt.Fprintf(stdout, "csisim clean: no dead run left anything in %s\n", os.TempDir())
	}
	return 0
}

// sweepDeadRuns is what run and serve do first: the leftovers of dead runs
// go, and the user is told, before a new run adds its own.
func sweepDeadRuns(stderr io.Writer) {
	swept, err := runroot.SweepWith(false, restoreHost)
	for _, t := range swept {
		fmt.Fprintf(stderr, "csisim: removed what a dead run left: %s\n", t)
	}
	if err != nil {
		fmt.Fprintf(stderr, "csisim: warning: %v\n", err)
	}
}

// restoreHost undoes, after a dead run's root is torn down, what its real
// nodes changed outside it (sysctls, fixed paths, cgroups, shims), from
// the record they kept in the root.
func restoreHost(dir string) func() error {
	h, err := realnodes.LoadHost(dir)
	if err != nil {
		return nil // no real nodes in that run
	}
	return h.Restore
}
