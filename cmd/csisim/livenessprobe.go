package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/csisim/csisim/realnodes/livenessprobe"
)

func livenessProbeCommand() *command {
	return &command{
		name:    "livenessprobe",
		summary: "serve /healthz for a CSI driver, as the livenessprobe sidecar does",
		usage:   []string{"csisim livenessprobe [flags]"},
		about: "Serves /healthz, which calls the CSI driver's Probe: 200 when it is ready, 500 when\n" +
			"it is not or cannot be reached, as the livenessprobe sidecar does, until SIGTERM or SIGINT.",
		prefix: "csisim livenessprobe", signals: true,
		new: func() subcommand { return &livenessProbeCmd{} },
	}
}

// livenessProbeCmd is `csisim livenessprobe`: csisim's stand-in for the
// livenessprobe sidecar (deploy/kubernetes/variants/built-here), with the
// sidecar's flags.
type livenessProbeCmd struct {
	invocation
	csiAddress string
	healthPort string
	timeout    time.Duration
}

func (c *livenessProbeCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.csiAddress, "csi-address", "/run/csi/socket", "address of the CSI driver socket")
	fs.StringVar(&c.healthPort, "health-port", livenessprobe.DefaultHealthPort, "TCP port to serve /healthz on, on every address")
	fs.DurationVar(&c.timeout, "probe-timeout", livenessprobe.DefaultProbeTimeout, "how long one check of the driver may take")
}

func (c *livenessProbeCmd) Run(ctx context.Context) error {
	if err := livenessprobe.Serve(ctx, net.JoinHostPort("", c.healthPort), c.csiAddress, c.timeout, c.stderr); err != nil {
		// The error names the probe.
		fmt.Fprintf(c.stderr, "csisim: %v\n", err)
		return errFailed
	}
	return nil
}
