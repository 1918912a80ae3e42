package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/csisim/csisim/realnodes/registrar"
)

// registrarMain is `csisim registrar`: csisim's own node-driver-registrar,
// registering a CSI node plugin with a real kubelet until SIGTERM or SIGINT.
func registrarMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("csisim registrar", flag.ContinueOnError)
	var (
		cfg      registrar.Config
		dir      string
		versions string
	)
	fs.StringVar(&cfg.DriverName, "driver-name", "", "CSI driver name to register, as the driver's GetPluginInfo reports it (required)")
	fs.StringVar(&cfg.Endpoint, "csi-address", "", "the driver's CSI socket as the kubelet dials it: an absolute path, or unix:///path (required)")
	fs.StringVar(&dir, "kubelet-registration-dir", registrar.DefaultRegistrationDir, "the kubelet's plugin registration directory, <kubelet root>/plugins_registry; the socket is DIR/<driver-name>-reg.sock")
	fs.StringVar(&cfg.Socket, "registration-socket", "", "the registration socket to serve (default: <kubelet-registration-dir>/<driver-name>-reg.sock)")
	fs.StringVar(&versions, "supported-versions", strings.Join(registrar.DefaultVersions, ","), "CSI versions the driver supports, comma-separated")
	fs.SetOutput(io.Discard) // usage and errors are reported below
	printUsage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: csisim registrar --driver-name NAME --csi-address PATH [flags]\n\nRegisters a CSI node plugin with a real kubelet through its plugin watcher, as\nnode-driver-registrar does, until SIGTERM or SIGINT; the socket is removed on exit.\n\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "csisim registrar: %v (see --help)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "csisim registrar: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}
	for _, req := range []struct{ name, value string }{{"driver-name", cfg.DriverName}, {"csi-address", cfg.Endpoint}} {
		if req.value == "" {
			fmt.Fprintf(stderr, "csisim registrar: --%s is required (see --help)\n", req.name)
			return 2
		}
	}
	if cfg.Socket == "" {
		cfg.Socket = registrar.SocketPath(dir, cfg.DriverName)
	}
	for v := range strings.SplitSeq(versions, ",") {
		if v = strings.TrimSpace(v); v != "" {
			cfg.Versions = append(cfg.Versions, v)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := registrar.Serve(ctx, cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err) // the error names the registrar
		return 1
	}
	return 0
}
