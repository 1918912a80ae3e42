package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/runroot"
)

func cleanCommand() *command {
	return &command{
		name:    "clean",
		summary: "remove what killed runs left behind (processes, loop devices, mounts, files)",
		usage:   []string{"csisim clean [--dry-run]"},
		about: "Removes what dead csisim runs left in the temporary directory ($TMPDIR, else /tmp): driver\n" +
			"processes, loop devices, mounts, run roots. Runs still alive are not touched.",
		prefix: "csisim clean",
		new:    func() subcommand { return &cleanCmd{} },
	}
}

// cleanCmd is `csisim clean`: tear down what dead runs (SIGKILLed,
// crashed) left in the temporary directory — their driver processes, loop
// devices, mounts and run roots — and say what went. Live runs are not
// touched.
type cleanCmd struct {
	invocation
	dryRun bool
}

func (c *cleanCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.dryRun, "dry-run", false, "only say what would be removed")
}

func (c *cleanCmd) Run(context.Context) error {
	swept, err := runroot.SweepWith(c.dryRun, restoreHost)
	verb := "removed"
	if c.dryRun {
		verb = "would remove"
	}
	for _, t := range swept {
		fmt.Fprintf(c.stdout, "csisim clean: %s %s\n", verb, t)
	}
	if err != nil {
		return err
	}
	if len(swept) == 0 {
		fmt.Fprintf(c.stdout, "csisim clean: no dead run left anything in %s\n", os.TempDir())
	}
	return nil
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
