package main

import (
	"fmt"
	"io"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	scenario "github.com/csisim/csisim/scenarios"
)

// runProfile is the driver profile a `csisim run` uses: the mock's with
// --mock-driver, else that of csisim's own driver; driverName (from
// --driver-name or the scenario's cluster.driverName), if set, renames the
// driver, as the run starts it under that name.
func runProfile(mock bool, driverName string) (*profile.Profile, error) {
	name := profiles.Default
	if mock {
		name = "mock"
	}
	p, err := profiles.Get(name)
	if err != nil {
		return nil, err
	}
	if driverName != "" {
		p.Name = driverName
	}
	return p, nil
}

// reportSkipped says that the scenario did not run, and why: the driver
// under test lacks what it needs. A skip is not a failure, so the exit
// code is 0, but the last line says SKIPPED, never PASSED.
func reportSkipped(sc *scenario.Scenario, why string, stdout io.Writer) int {
	fmt.Fprintf(stdout, "scenario %s (%s)\n\nSKIPPED: %s\n", sc.Name, sc.File, why)
	return 0
}
