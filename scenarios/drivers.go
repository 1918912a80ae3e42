package scenarios

import (
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/csisim/csisim/drivers/profiles"
)

// A scenario may run more CSI drivers beside the one under test, as a
// real cluster runs a block driver beside a file driver:
//
//	drivers:
//	  - profile: csisim-file     # a shipped driver profile
//	    name: file.csisim.io     # the name it runs under
//
// Each is a shipped profile started under the name given, which its
// manifests (CSIDriver, StorageClass provisioner) and the fault steps'
// driver: field name. The driver under test is the cluster's first, as
// in any scenario; its name is ${driver.name}.

// ExtraDriver is a CSI driver a scenario runs beside the driver under
// test (drivers:).
type ExtraDriver struct {
	// Profile is a shipped driver profile's name (profiles.Names).
	Profile string
	// Name is the name the driver runs under: the profile must take
	// {driverName} (or be the mock).
	Name string
	// Line is where the entry is in the scenario file.
	Line int
}

// DriverSet is implemented by backends that can run several CSI drivers
// at once (the simulator): a scenario with drivers: needs one that runs
// each of them.
type DriverSet interface {
	// DriverNames are the names of the drivers the backend runs, the
	// driver under test first.
	DriverNames() []string
}

// drivers reads drivers:, a list of {profile, name}.
func (p *parser) drivers(n *yaml.Node) []ExtraDriver {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "drivers must be a list of {profile, name}: the drivers to run beside the one under test")
		return nil
	}
	var out []ExtraDriver
	for _, item := range n.Content {
		f, ok := p.mapping(item, "a driver", "profile", "name")
		if !ok {
			continue
		}
		if missing := missingFields(f, []string{"profile", "name"}); len(missing) > 0 {
			p.fail(item, "a driver needs %s", listWords(missing, ""))
			continue
		}
		d := ExtraDriver{Line: resolve(item).Line}
		d.Profile, ok = p.nonEmpty(f.vals["profile"], "profile")
		d.Name, ok = p.nonEmptyAnd(ok, f.vals["name"], "name")
		switch {
		case !ok:
			continue
		case !slices.Contains(profiles.Names(), d.Profile):
			p.fail(f.vals["profile"], "there is no shipped driver profile %q%s; use one of %s", d.Profile,
				didYouMean(d.Profile, profiles.Names()), strings.Join(profiles.Names(), ", "))
			continue
		case slices.ContainsFunc(out, func(o ExtraDriver) bool { return o.Name == d.Name }):
			p.fail(f.vals["name"], "driver %s is listed twice; each driver runs under a name of its own", d.Name)
			continue
		}
		out = append(out, d)
	}
	return out
}

// driverName reads the driver: of a fault step, which must name one of
// the scenario's drivers:; without it the fault hits the driver under
// test.
func (p *parser) driverName(n *yaml.Node) (string, bool) {
	name, ok := p.nonEmpty(n, "driver")
	if !ok {
		return "", false
	}
	var names []string
	for _, d := range p.extraDrivers {
		names = append(names, d.Name)
	}
	if !slices.Contains(names, name) {
		if len(names) == 0 {
			p.fail(n, "driver %s: the scenario runs no other driver (drivers:); leave out driver: for the driver under test", name)
		} else {
			p.fail(n, "there is no driver %q in drivers: (%s)%s; leave out driver: for the driver under test", name,
				strings.Join(names, ", "), didYouMean(name, names))
		}
		return "", false
	}
	return name, true
}

// checkDriver reads the driver: of a csiCalls check: ${driver.name}, the
// driver under test, or one of drivers:, which it reports.
func (p *parser) checkDriver(n *yaml.Node) (name string, other bool) {
	const underTest = "${" + driverPrefix + "name}"
	if s, ok := p.nonEmpty(n, "driver"); !ok || s == underTest {
		return s, false
	}
	name, ok := p.driverName(n)
	return name, ok
}

// driverAnd is driverName after the fields before it were read well.
func (p *parser) driverAnd(ok bool, n *yaml.Node) (string, bool) {
	if !ok {
		return "", false
	}
	return p.driverName(n)
}

// checkDrivers refuses a scenario whose drivers: the backend does not run,
// before anything happens: a backend of one driver, or one started
// without them.
func checkDrivers(s *Scenario, b Backend) error {
	if len(s.Drivers) == 0 {
		return nil
	}
	set, ok := b.(DriverSet)
	if !ok {
		return fmt.Errorf("drivers: (%s) needs a backend that runs several CSI drivers (the simulator); this one runs one", s.extraDriverNames())
	}
	running := set.DriverNames()
	for _, d := range s.Drivers {
		if !slices.Contains(running[min(1, len(running)):], d.Name) {
			return fmt.Errorf("%s:%d: driver %s (profile %s) is not running beside the driver under test (running: %s): "+
				"start the cluster with the scenario's drivers (csisim run does; the Go API: csisimtest.Options.ExtraDrivers)",
				s.File, d.Line, d.Name, d.Profile, strings.Join(running, ", "))
		}
	}
	return nil
}

// extraDriverNames lists the names of the scenario's drivers:.
func (s *Scenario) extraDriverNames() string {
	names := make([]string, len(s.Drivers))
	for i, d := range s.Drivers {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}
