package main

import (
	"context"
	"flag"
	"os"

	"github.com/csisim/csisim/realnodes"
)

func cniCommand() *command {
	return &command{
		name:    "cni",
		summary: "the CNI plugin of real nodes",
		usage:   []string{"csisim cni < NETWORK-CONFIG"},
		hidden:  true, rawArgs: true, maxArgs: -1,
		new: func() subcommand { return &cniCmd{} },
	}
}

// cniCmd is `csisim cni`: the CNI plugin of real nodes, which containerd
// runs (through a wrapper script in the node's CNI bin directory) to give
// each pod sandbox its network. It speaks the CNI protocol: CNI_*
// environment and the network configuration on stdin, the result or
// error as JSON on stdout.
type cniCmd struct{ invocation }

func (c *cniCmd) flags(*flag.FlagSet) {}

func (c *cniCmd) Run(context.Context) error {
	if err := realnodes.CNI(os.Getenv, c.stdin, c.stdout); err != nil {
		return errFailed
	}
	return nil
}
