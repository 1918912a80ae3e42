// Package clusterprofile turns a driver profile (drivers/profile) and what
// a scenario asks of the cluster into the simulated cluster's Config:
// which commands start the controller and node plugins in which layout,
// with which flags for zones, capacity, volume limits and the rest. It is
// the one way csisim run, csisim serve and the Go API start a driver, so
// the mock, csisim's own driver and a third-party one take the same path.
package clusterprofile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
)

// Options are how to start the profile's driver here.
type Options struct {
	// DriverName, if set, replaces the profile's name for a driver that
	// takes its name as a flag ({driverName}) or the mock: a scenario's
	// cluster.driverName. A driver that reports a fixed name cannot be
	// renamed; Config refuses that.
	DriverName string
	// BuildLog receives `go build`'s output when the profile's driver is
	// built (start.build); default: discarded.
	BuildLog io.Writer
}

// Config returns the cluster configuration that runs the profile's driver
// for request r, building the driver first if the profile says how
// (start.build). The caller sets the rest (Seed, OnEntry, DriverBinary,
// DriverLog...). A request the profile cannot carry out is an
// *profile.Unsupported error.
func Config(ctx context.Context, p *profile.Profile, r profile.Request, opts Options) (cluster.Config, error) {
	if err := p.Check(r); err != nil {
		return cluster.Config{}, err
	}
	cfg := cluster.Config{Nodes: r.Nodes, Zones: r.Zones, SELinux: r.SELinux, DriverName: p.Name, Mock: p.Start.Mock,
		NoMounts: !p.Start.Mock && !p.Has(profile.RealMounts), HealthMonitor: r.HealthMonitor}
	if opts.DriverName != "" && opts.DriverName != p.Name {
		if !p.Start.Mock && !usesPlaceholder(p, "{driverName}") {
			return cluster.Config{}, fmt.Errorf("driver profile %s: the driver's name is %s and its commands take no {driverName}, "+
				"so it cannot be started as %s (the scenario's cluster.driverName)", label(p), p.Name, opts.DriverName)
		}
		cfg.DriverName = opts.DriverName
	}
	cfg.VerifyDriver = verifier(p, cfg.DriverName)
	switch p.Start.Layout {
	case profile.Combined:
		cfg.Layout = cluster.LayoutCombined
	default:
		cfg.Layout = cluster.LayoutSplit
	}
	if p.Start.Mock {
		if args := p.Args(r, true); len(args) > 0 {
			return cluster.Config{}, &profile.Unsupported{Profile: label(p),
				Reason: fmt.Sprintf("the in-process mock takes no driver flags, and %q were asked for", args)}
		}
		return cfg, nil
	}
	built := ""
	if p.Start.Build != "" {
		var err error
		if built, err = Build(ctx, p.Start.Build, opts.BuildLog); err != nil {
			return cluster.Config{}, fmt.Errorf("driver profile %s: %w", label(p), err)
		}
	}
	nodeArgs, ctrlArgs := p.Args(r, true), p.Args(r, false)
	switch cfg.Layout {
	case cluster.LayoutCombined:
		cfg.Driver = template(p.Start.Command, built, nodeArgs)
	default:
		cfg.Driver = template(p.Start.Node, built, nodeArgs)
		cfg.ControllerDriver = template(p.Start.Controller, built, ctrlArgs)
	}
	cfg.ZoneArgs = p.Flags.Zone
	return cfg, nil
}

// template is the launch template of c, with {built} filled in and args
// added.
func template(c *profile.Command, built string, args []string) launch.Template {
	fill := func(s string) string {
		if built == "" {
			return s
		}
		return strings.ReplaceAll(s, "{built}", built)
	}
	t := launch.Template{Path: fill(c.Path)}
	for _, a := range c.Args {
		t.Args = append(t.Args, fill(a))
	}
	t.Args = append(t.Args, args...)
	for _, e := range c.Env {
		t.Env = append(t.Env, fill(e))
	}
	return t
}

// usesPlaceholder says whether any of the profile's commands uses ph.
func usesPlaceholder(p *profile.Profile, ph string) bool {
	for _, c := range []*profile.Command{p.Start.Command, p.Start.Controller, p.Start.Node} {
		if c == nil {
			continue
		}
		if strings.Contains(c.Path, ph) {
			return true
		}
		for _, s := range append(append([]string(nil), c.Args...), c.Env...) {
			if strings.Contains(s, ph) {
				return true
			}
		}
	}
	return false
}

func label(p *profile.Profile) string {
	if p.File != "" {
		return p.File
	}
	return p.Name
}

// Ask starts the profile's driver as a run of one node would, with what
// it needs to start (building it first if the profile says how), asks it
// what it says of itself, refuses it if that contradicts the profile (the
// cluster's VerifyDriver) or if it declares raw block volumes the driver
// does not make (checkBlock), and tears it all down: for a command that
// checks a driver once before running anything with it (csisim test).
func Ask(ctx context.Context, p *profile.Profile, opts Options) (driverinfo.Info, error) {
	cfg, err := Config(ctx, p, profile.Request{Nodes: []string{"node-1"}}, opts)
	if err != nil {
		return driverinfo.Info{}, err
	}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		return driverinfo.Info{}, fmt.Errorf("starting the driver of %s: %w", label(p), err)
	}
	info := c.DriverInfo()
	err = checkBlock(ctx, c, p, info)
	return info, errors.Join(err, c.Close())
}

// AddDrivers adds to cfg the drivers a scenario runs beside the one
// under test (its drivers:), each a shipped profile started under its
// name for request r, as Config starts the first.
func AddDrivers(ctx context.Context, cfg *cluster.Config, drivers []scenarios.ExtraDriver, r profile.Request, opts Options) error {
	for _, d := range drivers {
		p, err := profiles.Get(d.Profile)
		if err != nil {
			return fmt.Errorf("driver %s: %w", d.Name, err)
		}
		opts.DriverName = d.Name
		extra, err := Config(ctx, p, r, opts)
		if err != nil {
			return fmt.Errorf("driver %s: %w", d.Name, err)
		}
		cfg.ExtraDrivers = append(cfg.ExtraDrivers, extra.FirstDriver())
	}
	return nil
}
