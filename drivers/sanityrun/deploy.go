package sanityrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/drivers/profile"
)

// The node the driver's node plugin serves under csi-sanity, and its zone
// when the profile can be told one.
const (
	NodeID = "sanity-node"
	Zone   = "zone-1"
	// VolumeLimit is the per-node volume limit the node plugin is given
	// when the profile can be told one (flags.volumeLimit), so that
	// csi-sanity's NodeGetInfo max_volumes_per_node check runs.
	VolumeLimit = 8
)

// Deployment is a driver started from a profile for csi-sanity: the
// controller and node endpoints, the same one for a combined driver.
type Deployment struct {
	// NodeEndpoint serves the node service (and, combined, everything).
	NodeEndpoint string
	// ControllerEndpoint serves the controller service; "" for a combined
	// driver, whose NodeEndpoint serves it too.
	ControllerEndpoint string
	// VolumeLimit is the node plugin's volume limit, 0 if it was not set.
	VolumeLimit int

	processes []*launch.Process
	servers   []*mock.Server
}

// DeployConfig says how to start the driver of a profile.
type DeployConfig struct {
	Profile *profile.Profile
	// Dir is a directory of the run's own; sockets, state and the
	// driver's storage go below it.
	Dir string
	// Binary is the csisim binary, for {csisim} in a profile's commands.
	Binary string
	// Built is the binary built from the profile's start.build, for
	// {built}; "" if the profile builds nothing.
	Built string
	// Log receives the driver processes' output.
	Log io.Writer
	// StartTimeout bounds how long a driver may take to become ready.
	StartTimeout time.Duration
	// Record, if set, is told each driver process's PID as it starts (the
	// run root's RecordProcess), so that a run killed before it could
	// stop its drivers has them killed by the next run's sweep.
	Record func(pid int) error
}

// Deploy starts the driver of cfg.Profile: a split driver's controller and
// node plugins, a combined driver's one process, or the in-process mock.
// Stop stops what it started, also when Deploy fails half way.
func Deploy(ctx context.Context, cfg DeployConfig) (*Deployment, error) {
	p := cfg.Profile
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = time.Minute
	}
	d := &Deployment{}
	if p.Has(profile.VolumeLimits) && len(p.Flags.VolumeLimit) > 0 {
		d.VolumeLimit = VolumeLimit
	}
	socket := func(name string) string { return "unix://" + filepath.Join(cfg.Dir, name, "csi.sock") }
	for _, dir := range []string{"controller", "node", "storage", "tmp"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, dir), 0o750); err != nil {
			return d, fmt.Errorf("preparing %s: %w", dir, err)
		}
	}

	if p.Start.Mock {
		backend := mock.NewBackend(0)
		plugins := []mock.Config{{Name: p.Name, NodeID: NodeID, Mode: mock.ModeNode, Backend: backend, MaxVolumesPerNode: int64(d.VolumeLimit)}}
		d.NodeEndpoint = socket("node")
		if p.Start.Layout == profile.Combined {
			plugins[0].Mode = mock.ModeAll
		} else {
			plugins = append(plugins, mock.Config{Name: p.Name, Mode: mock.ModeController, Backend: backend})
			d.ControllerEndpoint = socket("controller")
		}
		for i, pc := range plugins {
			drv, err := mock.New(pc)
			if err != nil {
				return d, fmt.Errorf("mock driver: %w", err)
			}
			endpoint := d.NodeEndpoint
			if i == 1 {
				endpoint = d.ControllerEndpoint
			}
			srv, err := drv.Start(endpoint)
			if err != nil {
				return d, err
			}
			d.servers = append(d.servers, srv)
		}
		return d, nil
	}

	type plugin struct {
		name, dir string
		cmd       *profile.Command
		node      bool
	}
	var plugins []plugin
	if p.Start.Layout == profile.Combined {
		plugins = []plugin{{name: "driver", dir: "node", cmd: p.Start.Command, node: true}}
	} else {
		plugins = []plugin{{name: "controller plugin", dir: "controller", cmd: p.Start.Controller},
			{name: "node plugin", dir: "node", cmd: p.Start.Node, node: true}}
	}
	for _, pl := range plugins {
		tmpl, err := Template(pl.cmd, cfg.Built)
		if err != nil {
			return d, fmt.Errorf("%s: %w", pl.name, err)
		}
		// The profile's flags for what csi-sanity exercises: the node's
		// zone, a volume limit, the multi-node access modes.
		zone := ""
		if pl.node && p.Has(profile.Zones) {
			zone = Zone
			tmpl.Args = append(tmpl.Args, p.Flags.Zone...)
		}
		tmpl.Args = append(tmpl.Args, p.Args(profile.Request{VolumeLimit: d.VolumeLimit, MultiNode: p.Has(profile.MultiNode)}, pl.node)...)
		// The driver's temporary files stay below the run's directory.
		tmpl.Env = append(tmpl.Env, "TMPDIR="+filepath.Join(cfg.Dir, "tmp"))
		nodeID := "controller"
		if pl.node {
			nodeID = NodeID
		}
		stateDir := filepath.Join(cfg.Dir, pl.dir, "state")
		if err := os.MkdirAll(stateDir, 0o750); err != nil {
			return d, fmt.Errorf("preparing %s: %w", stateDir, err)
		}
		endpoint := socket(pl.dir)
		proc, err := launch.Start(context.Background(), pl.name, tmpl,
			launch.Vars{Endpoint: endpoint, NodeID: nodeID, StateDir: stateDir, Root: filepath.Join(cfg.Dir, "storage"),
				Zone: zone, DriverName: p.Name, CSISim: cfg.Binary}, cfg.Log)
		if err != nil {
			return d, err
		}
		d.processes = append(d.processes, proc)
		if cfg.Record != nil {
			if err := cfg.Record(proc.PID()); err != nil {
				return d, err
			}
		}
		readyCtx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
		err = proc.WaitReady(readyCtx)
		cancel()
		if err != nil {
			return d, fmt.Errorf("%s did not become ready: %w", pl.name, err)
		}
		if pl.node {
			d.NodeEndpoint = endpoint
		} else {
			d.ControllerEndpoint = endpoint
		}
	}
	return d, nil
}

// Template is a profile's command as a launch template, with {built} in
// it replaced by the binary built from the profile's start.build; launch
// fills in the other placeholders.
func Template(c *profile.Command, built string) (launch.Template, error) {
	if c == nil {
		return launch.Template{}, errors.New("the profile has no command for it")
	}
	r := strings.NewReplacer("{built}", built)
	if built == "" && strings.Contains(c.Path, "{built}") {
		return launch.Template{}, fmt.Errorf("path %s: the profile has no start.build to make {built} from", c.Path)
	}
	t := launch.Template{Path: r.Replace(c.Path)}
	for _, a := range c.Args {
		t.Args = append(t.Args, r.Replace(a))
	}
	for _, e := range c.Env {
		t.Env = append(t.Env, r.Replace(e))
	}
	return t, nil
}

// Stop stops every driver process and mock server of the deployment.
func (d *Deployment) Stop() error {
	var errs []error
	for _, p := range d.processes {
		if err := p.Stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range d.servers {
		if err := s.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
