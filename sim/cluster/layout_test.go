package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/drivers/launch"
)

// csisimAllServices runs csisim's own driver as a combined driver would
// be: one process per node serving identity, controller and node.
func csisimAllServices() launch.Template {
	return launch.Template{Path: "{csisim}", Args: []string{"driver", "--endpoint", "{endpoint}", "--node-id", "{nodeID}",
		"--root", "{root}", "--state-dir", "{stateDir}", "--mode", "all", "--driver-name", "{driverName}"}}
}

func TestCombinedLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"a driver process per node", Config{Driver: csisimAllServices(), DriverBinary: csisimBinary}},
		{"the mock", Config{Mock: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := tc.cfg
			cfg.Nodes, cfg.Layout, cfg.Seed = nodeNames(2), LayoutCombined, 1
			c, err := Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}()
			ctrl, first := c.driver.controllerPlugin(), c.nodes["node-1"].plugin
			if ctrl.role != "controller" || ctrl.host != first || ctrl.driverEndpoint != first.driverEndpoint {
				t.Fatalf("controller plugin %q: host %v, endpoint %s; want the node plugin on node-1 (%s)", ctrl.name, ctrl.host, ctrl.driverEndpoint, first.driverEndpoint)
			}
			if cfg.Mock {
				if len(c.driver.processes) != 0 {
					t.Fatalf("%d driver processes with the mock", len(c.driver.processes))
				}
			} else if len(c.driver.processes) != 2 {
				t.Fatalf("%d driver processes, want one per node and none for the controller", len(c.driver.processes))
			}
			if err := provisionClaims(ctx, c, 2, time.Minute); err != nil {
				t.Fatalf("claims not bound through the first node's driver: %v", err)
			}
		})
	}
}

func TestDriverArgsNeedOurDriver(t *testing.T) {
	for _, cfg := range []Config{
		{DriverArgs: []string{"--capacity=1Gi"}, Driver: launch.Template{Path: "/bin/hostpathplugin"}},
		{DriverArgs: []string{"--capacity=1Gi"}, Mock: true},
	} {
		_, err := Start(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "are flags of csisim's own driver") {
			t.Errorf("Start(%+v): %v, want the driver arguments refused", cfg, err)
		}
	}
}
