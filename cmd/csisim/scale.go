package main

import (
	"context"
	"flag"

	"github.com/csisim/csisim/scenarios/scale"
)

func scaleCommand() *command {
	return &command{
		name:    "scale",
		summary: "print a scale scenario: N claims and pods on M nodes, created and deleted",
		usage:   []string{"csisim scale [--claims N] [--nodes M] > scale.yaml"},
		about: "Prints a scenario: N claims and N pods on M nodes, all Running, then all deleted\n" +
			"until no volume and no attachment is left. Run it with csisim run --quiet.",
		new: func() subcommand { return &scaleCmd{} },
	}
}

// scaleCmd is `csisim scale`: print a generated scale scenario, to run
// with `csisim run` (the benchmarks run the same one).
type scaleCmd struct {
	invocation
	claims, nodes int
}

func (c *scaleCmd) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.claims, "claims", 1000, "claims, and pods using one claim each")
	fs.IntVar(&c.nodes, "nodes", 100, "nodes; pods are pinned to them round-robin")
}

func (c *scaleCmd) Run(context.Context) error {
	out, err := scale.Scenario(scale.Config{Claims: c.claims, Nodes: c.nodes})
	if err != nil {
		return usageError(err)
	}
	_, _ = c.stdout.Write(out)
	return nil
}
