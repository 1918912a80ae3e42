package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os/signal"
	"syscall"

	"github.com/csisim/csisim/realnodes/livenessprobe"
)

// livenessProbeMain is `csisim livenessprobe`: csisim's stand-in for the
// livenessprobe sidecar (deploy/kubernetes/variants/built-here), with the
// sidecar's flags, until SIGTERM or SIGINT.
func livenessProbeMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim livenessprobe", flag.ContinueOnError)
	csiAddress := fs.String("csi-address", "/run/csi/socket", "address of the CSI driver socket")
	healthPort := fs.String("health-port", livenessprobe.DefaultHealthPort, "TCP port to serve /healthz on, on every address")
	timeout := fs.Duration("probe-timeout", livenessprobe.DefaultProbeTimeout, "how long one check of the driver may take")
	fs.SetOutput(io.Discard) // usage and errors are reported below
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: csisim livenessprobe [flags]\n\nServes /healthz, which calls the CSI driver's Probe: 200 when it is ready, 500 when\nit is not or cannot be reached, as the livenessprobe sidecar does.\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "csisim livenessprobe: %v (see --help)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "csisim livenessprobe: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := livenessprobe.Serve(ctx, net.JoinHostPort("", *healthPort), *csiAddress, *timeout, stderr); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 1
	}
	return 0
}
