package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/csisim/csisim/scenarios/scale"
)

// scaleScenario is `csisim scale`: print a generated scale scenario, to run
// with `csisim run` (the benchmarks run the same one).
func scaleScenario(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	claims := fs.Int("claims", 1000, "claims, and pods using one claim each")
	nodes := fs.Int("nodes", 100, "nodes; pods are pinned to them round-robin")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: csisim scale [--claims N] [--nodes M] > scale.yaml\n\n"+
			"Prints a scenario: N claims and N pods on M nodes, all Running, then all deleted\n"+
			"until no volume and no attachment is left. Run it with csisim run --quiet.\n\nFlags:\n")
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
	out, err := scale.Scenario(scale.Config{Claims: *claims, Nodes: *nodes})
	if err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 2
	}
	_, _ = stdout.Write(out)
	return 0
}
