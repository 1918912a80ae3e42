package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/csisim/csisim/sim/cluster"
)

// classroomFlags are csisim serve's flags for the shape of the cluster and
// the pace of its clock, for labs (docs/labs/): what a scenario's cluster:
// section says, and a clock that can run faster than the wall clock.
type classroomFlags struct {
	zones      string
	driverArgs string
	speed      float64
}

func addClassroomFlags(fs *flag.FlagSet) *classroomFlags {
	f := &classroomFlags{}
	fs.StringVar(&f.zones, "zones", "", "comma-separated NODE=ZONE: the node's topology.kubernetes.io/zone label and the zone\n"+
		"csisim's driver reports for it, as a scenario's cluster.zones")
	fs.StringVar(&f.driverArgs, "driver-args", "", "space-separated flags for csisim's driver on every plugin, as a scenario's\n"+
		"cluster.driverArgs (csisim driver --help), e.g. --driver-args=--capacity=2Gi")
	fs.Float64Var(&f.speed, "speed", 1, "run the virtual clock this many times as fast as the wall clock, e.g. 20 to see the\n"+
		"6-minute force detach in 18 s (not with --without: real components run on wall time)")
	return f
}

// apply puts the flags into cfg, whose Nodes are already set.
func (f *classroomFlags) apply(cfg *cluster.Config) error {
	if f.speed <= 0 {
		return fmt.Errorf("--speed %v: must be more than 0", f.speed)
	}
	cfg.Speed = f.speed
	cfg.DriverArgs = strings.Fields(f.driverArgs)
	if f.zones == "" {
		return nil
	}
	cfg.Zones = map[string]string{}
	for _, nz := range strings.Split(f.zones, ",") {
		node, zone, ok := strings.Cut(nz, "=")
		if !ok || zone == "" {
			return fmt.Errorf("--zones: %q is not NODE=ZONE", nz)
		}
		if !slices.Contains(cfg.Nodes, node) {
			return fmt.Errorf("--zones: there is no node %q (--nodes %s)", node, strings.Join(cfg.Nodes, ","))
		}
		cfg.Zones[node] = zone
	}
	return nil
}
