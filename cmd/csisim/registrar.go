package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/csisim/csisim/realnodes/registrar"
)

func registrarCommand() *command {
	return &command{
		name:    "registrar",
		summary: "register a CSI node plugin with a real kubelet",
		usage:   []string{"csisim registrar --driver-name NAME --csi-address PATH [flags]"},
		about: "Registers a CSI node plugin with a real kubelet through its plugin watcher, as\n" +
			"node-driver-registrar does, until SIGTERM or SIGINT; the socket is removed on exit.",
		prefix: "csisim registrar", signals: true,
		new: func() subcommand { return &registrarCmd{} },
	}
}

// registrarCmd is `csisim registrar`: csisim's own
// node-driver-registrar, registering a CSI node plugin with a real
// kubelet until SIGTERM or SIGINT.
type registrarCmd struct {
	invocation
	cfg      registrar.Config
	dir      string
	versions string
}

func (c *registrarCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.DriverName, "driver-name", "", "CSI driver name to register, as the driver's GetPluginInfo reports it (required)")
	fs.StringVar(&c.cfg.Endpoint, "csi-address", "", "the driver's CSI socket as the kubelet dials it: an absolute path, or unix:///path (required)")
	fs.StringVar(&c.dir, "kubelet-registration-dir", registrar.DefaultRegistrationDir, "the kubelet's plugin registration directory, <kubelet root>/plugins_registry; the socket is DIR/<driver-name>-reg.sock")
	fs.StringVar(&c.cfg.Socket, "registration-socket", "", "the registration socket to serve (default: <kubelet-registration-dir>/<driver-name>-reg.sock)")
	fs.StringVar(&c.versions, "supported-versions", strings.Join(registrar.DefaultVersions, ","), "CSI versions the driver supports, comma-separated")
}

func (c *registrarCmd) Run(ctx context.Context) error {
	for _, req := range []struct{ name, value string }{{"driver-name", c.cfg.DriverName}, {"csi-address", c.cfg.Endpoint}} {
		if req.value == "" {
			return usagef("--%s is required (see --help)", req.name)
		}
	}
	cfg := c.cfg
	if cfg.Socket == "" {
		cfg.Socket = registrar.SocketPath(c.dir, cfg.DriverName)
	}
	for v := range strings.SplitSeq(c.versions, ",") {
		if v = strings.TrimSpace(v); v != "" {
			cfg.Versions = append(cfg.Versions, v)
		}
	}
	if err := registrar.Serve(ctx, cfg, c.stderr); err != nil {
		// The error names the registrar.
		fmt.Fprintf(c.stderr, "csisim: %v\n", err)
		return errFailed
	}
	return nil
}
