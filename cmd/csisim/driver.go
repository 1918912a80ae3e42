package main

import (
	"context"
	"flag"

	"github.com/csisim/csisim/drivers/hostpath"
)

func driverCommand() *command {
	return &command{
		name:    "driver",
		summary: "run csisim's CSI driver on a unix socket",
		usage:   []string{"csisim driver [flags]"},
		// The driver reads its own flags: it is also started alone, by
		// launchers that read its exit codes and messages.
		rawArgs: true, maxArgs: -1,
		new: func() subcommand { return &driverCmd{} },
	}
}

// driverCmd runs csisim's own CSI driver; the simulator starts it this way
// as a separate process, and so can any CSI tool. It stops on SIGTERM and
// SIGINT by itself.
type driverCmd struct{ invocation }

func (c *driverCmd) flags(*flag.FlagSet) {}

func (c *driverCmd) Run(context.Context) error {
	return exitStatus(hostpath.Main(c.args, c.stdout, c.stderr))
}
