package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
)

// driverUsage is the help of --driver.
const driverUsage = "the CSI driver to run, by its driver profile: a shipped profile's name (csisim, csisim-file, mock, csi-test-mock)\n" +
	"or a profile file (docs/drivers.md: Bring your own driver); default csisim"

// driverChoice is what the flags of `csisim run` and `csisim serve` say
// about the driver. However it is named — a profile, --mock-driver, or
// --driver-command with --driver-name — it becomes a profile, and the
// profile the cluster's configuration (package clusterprofile).
type driverChoice struct {
	profile string // --driver
	mock    bool   // --mock-driver: the shipped mock profile
	command string // --driver-command: a profile made from one command line
	name    string // --driver-name: the driver's name, over the scenario's
}

// resolve returns the profile the flags choose.
func (d driverChoice) resolve() (*profile.Profile, error) {
	chosen := 0
	for _, set := range []bool{d.profile != "", d.mock, d.command != ""} {
		if set {
			chosen++
		}
	}
	if chosen > 1 {
		return nil, errors.New("--driver, --mock-driver and --driver-command each choose the driver: give one")
	}
	switch {
	case d.mock:
		return profiles.Load("mock")
	case d.command != "":
		return commandProfile(d.command, d.name)
	case d.profile != "":
		return profiles.Load(d.profile)
	}
	return profiles.Load("csisim")
}

// commandProfile is the profile of --driver-command: the same command
// line for the controller plugin and every node plugin, in the split
// layout, as it always ran; a driver that serves everything in one
// process wants a profile with layout combined instead (--driver).
func commandProfile(command, name string) (*profile.Profile, error) {
	words := strings.Fields(command)
	if len(words) == 0 {
		return nil, errors.New("--driver-command: empty")
	}
	cmd := &profile.Command{Path: words[0], Args: words[1:]}
	all := launch.Vars{Endpoint: "unix:///x", NodeID: "x", StateDir: "/x", Root: "/x", Zone: "x", DriverName: "x", CSISim: "/x"}
	if _, err := (launch.Template{Path: cmd.Path, Args: cmd.Args}).Expand(all); err != nil {
		return nil, fmt.Errorf("--driver-command: %w", err)
	}
	// Without --driver-name the profile names no driver: its own name
	// comes from GetPluginInfo, and is not checked against one.
	return &profile.Profile{Name: name, Description: "--driver-command " + command,
		Start:        profile.Start{Layout: profile.Split, Controller: cmd, Node: cmd},
		Capabilities: map[profile.Capability]bool{profile.RealMounts: true}}, nil
}

// clusterConfig returns the profile the flags choose and the cluster
// configuration that runs it for r; scenarioDriverName is the scenario's
// cluster.driverName ("" for none), which --driver-name overrides.
func (d driverChoice) clusterConfig(ctx context.Context, r profile.Request, scenarioDriverName string, buildLog io.Writer) (cluster.Config, *profile.Profile, error) {
	name := scenarioDriverName
	if d.name != "" {
		name = d.name
	}
	if d.command != "" {
		// The command's driver reports its own name; this one only names
		// its plugin directory until GetPluginInfo says it, as always.
		d.name, name = name, ""
	}
	p, err := d.resolve()
	if err != nil {
		return cluster.Config{}, nil, err
	}
	opts := clusterprofile.Options{DriverName: name, BuildLog: buildLog}
	cfg, err := clusterprofile.Config(ctx, p, r, opts)
	if err != nil {
		return cluster.Config{}, nil, err
	}
	return cfg, p, nil
}

// realkubeDriverName is the name csisim's driver runs under on the real
// control plane: --driver-name, else the scenario's.
func realkubeDriverName(sc *scenarios.Scenario, flagName string) string {
	if flagName != "" {
		return flagName
	}
	return sc.Cluster.DriverName
}

// reportSkipped says that the scenario did not run, and why: the driver
// under test lacks what it needs. A skip is not a failure, so the exit
// code is 0, but the last line says SKIPPED, never PASSED; the
// --json-result and --junit files say it too (a skipped test case), so
// that a CI job reading them never counts a skip as a pass.
func reportSkipped(sc *scenarios.Scenario, why string, r skippedRun, stdout, stderr io.Writer) int {
	fmt.Fprintf(stdout, "scenario %s (%s)\n\nSKIPPED: %s\n", sc.Name, sc.File, why)
	res := seedResult{Seed: r.seed, Steps: "0 steps", Skipped: why}
	if err := writeResults(res, sc.Name, r.file, r.jsonResult, r.junitFile, r.replay); err != nil {
		fmt.Fprintf(stderr, "csisim: %v\n", err)
		return 1
	}
	return 0
}

// skippedRun is where reportSkipped writes a skipped run's result.
type skippedRun struct {
	seed                  uint64
	file                  string
	jsonResult, junitFile string
	replay                func(uint64) string
}

// extraDriverUsage is the help of --extra-driver.
const extraDriverUsage = "run another CSI driver beside the first, as a real cluster runs a block driver beside a file driver:\n" +
	"PROFILE=NAME, a shipped profile started under NAME (csisim-file=shares.csisim.io), or PROFILE under its profile's name;\n" +
	"repeatable. Each gets its own sidecars, a node plugin on every node, and its CSIDriver and a StorageClass named NAME"

// extraDriversFlag is --extra-driver, given once per driver.
type extraDriversFlag []scenarios.ExtraDriver

func (f *extraDriversFlag) String() string {
	var out []string
	for _, d := range *f {
		out = append(out, d.Profile+"="+d.Name)
	}
	return strings.Join(out, ",")
}

// Set reads PROFILE=NAME, or PROFILE alone for the profile's own name.
func (f *extraDriversFlag) Set(v string) error {
	name, driver, named := strings.Cut(v, "=")
	p, err := profiles.Get(name)
	if err != nil {
		return err
	}
	if !named {
		driver = p.Name
	}
	if driver == "" {
		return fmt.Errorf("%q: the driver needs a name: PROFILE=NAME", v)
	}
	*f = append(*f, scenarios.ExtraDriver{Profile: name, Name: driver})
	return nil
}
