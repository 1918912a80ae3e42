package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/csisim/csisim/fault"
)

// TestTableNamesTheSimulatedComponents keeps the table and the list of
// components the scenarios and API faults check names against the same,
// and every start-up check in checkOrder.
func TestTableNamesTheSimulatedComponents(t *testing.T) {
	var names, checked []string
	for _, s := range controlPlane {
		names = append(names, s.name)
		if s.check != nil {
			checked = append(checked, s.name)
		}
		if s.start == nil {
			t.Errorf("%s has no Start", s.name)
		}
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(fault.Components)); !slices.Equal(names, want) {
		t.Errorf("the table's components are %v, fault.Components %v", names, want)
	}
	slices.Sort(checked)
	if want := slices.Sorted(slices.Values(checkOrder)); !slices.Equal(checked, want) {
		t.Errorf("the components with a start-up check are %v, checkOrder has %v", checked, want)
	}
}

// TestRestartComponent restarts components from their rows, as a
// container restart does: the old instance's workers and informers leave
// the loop, a sidecar asks its driver again, and the cluster goes on.
func TestRestartComponent(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	running := func() []string {
		var names []string
		for _, rc := range c.components.running {
			names = append(names, rc.name)
		}
		slices.Sort(names)
		return names
	}
	before, informers := running(), len(c.loop.InformerResources("external-provisioner"))
	for _, name := range []string{"persistentvolume-binder", "external-provisioner", "csi-snapshotter"} {
		if err := c.restartComponent(name, c.driver); err != nil {
			t.Fatalf("restarting %s: %v", name, err)
		}
	}
	if got := running(); !slices.Equal(got, before) {
		t.Errorf("running after the restarts: %v, want %v as before", got, before)
	}
	if got := len(c.loop.InformerResources("external-provisioner")); got != informers {
		t.Errorf("the restarted provisioner has %d informers, want %d as before", got, informers)
	}
	asked := 0
	for _, e := range c.CSICalls() {
		if e.Actor == "csi-snapshotter" && e.Verb == "ControllerGetCapabilities" {
			asked++
		}
	}
	if asked != 2 {
		t.Errorf("the csi-snapshotter asked the driver's capabilities %d times, want at start and at its restart", asked)
	}
	if err := provisionClaims(ctx, c, 2, time.Minute); err != nil {
		t.Fatalf("claims not bound by the restarted components: %v", err)
	}
	if err := c.restartComponent("kubelet:node-1", c.driver); err == nil {
		t.Error("restarted a component that is no row of the table")
	}
}

// TestSidecarRestartedWhileDriverIsDownWaits restarts the
// external-provisioner while the controller plugin is dead: as a real sidecar waits to connect
// to the driver's socket, it does not start (and fails no check) until the
// plugin is back, and then asks the driver as at any start. Nemesis seed 57
// of basic-lifecycle failed on this before.
func TestSidecarRestartedWhileDriverIsDownWaits(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Mock: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const name = "external-provisioner"
	key := c.componentKey(name, c.driver)
	asked := func() int {
		n := 0
		for _, e := range c.CSICalls() {
			if e.Actor == name && e.Verb == "GetPluginInfo" && e.Err == "" {
				n++
			}
		}
		return n
	}
	before := asked()
	pl := c.driver.controllerPlugin()
	if err := c.crashPlugin(pl); err != nil {
		t.Fatal(err)
	}
	if err := c.restartComponent(name, c.driver); err != nil {
		t.Fatalf("restarting %s while the driver is down: %v", name, err)
	}
	if c.components.isRunning(key) {
		t.Errorf("%s runs while the driver it connects to is down", name)
	}
	if !slices.Equal(c.driver.connecting, []string{name}) {
		t.Errorf("waiting to connect: %v, want [%s]", c.driver.connecting, name)
	}
	if err := c.canRestartSidecar(fault.Fault{Kind: fault.SidecarRestart, Component: name}); err != nil {
		t.Errorf("a sidecar waiting to connect cannot be restarted again: %v", err)
	}
	if err := c.restartPlugin(ctx, pl, false); err != nil {
		t.Fatal(err)
	}
	if !c.components.isRunning(key) || len(c.driver.connecting) != 0 {
		t.Errorf("%s did not start once the driver was back (waiting: %v)", name, c.driver.connecting)
	}
	if got := asked(); got != before+1 {
		t.Errorf("the %s asked the driver's name %d times, want %d: at start and once the driver was back", name, got, before+1)
	}
}

// TestWithoutLeavesRowsOut starts a cluster without two sidecars, as
// csisim serve --without does for real ones to take their place: their
// rows do not start and their checks do not ask the driver, while the
// driver's name is still asked.
func TestWithoutLeavesRowsOut(t *testing.T) {
	ctx := context.Background()
	without := []string{"csi-snapshotter", "external-provisioner"}
	c, err := Start(ctx, Config{Mock: true, Seed: 1, Realtime: true, Without: without, DaemonSets: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var running []string
	for _, rc := range c.components.running {
		running = append(running, rc.name)
	}
	// The kubelet runs too; the health monitor, not asked for, does not.
	if want := len(controlPlane) - len(without) - 1 + 1; len(running) != want {
		t.Errorf("running %v, want %d components", running, want)
	}
	for _, name := range without {
		if slices.Contains(running, name) {
			t.Errorf("%s runs, though left out", name)
		}
	}
	var calls []string
	for _, e := range c.CSICalls() {
		calls = append(calls, e.Actor+" "+e.Verb)
	}
	if !slices.Contains(calls, "external-provisioner GetPluginInfo") || slices.Contains(calls, "csi-snapshotter ControllerGetCapabilities") {
		t.Errorf("CSI calls at start %v: want the driver's name asked, and no check of the left-out csi-snapshotter", calls)
	}
}

// TestDaemonSetControllerIsOptIn: a cluster runs the DaemonSet controller
// only when asked (Config.DaemonSets, or a deployment), so that a run
// without DaemonSets has the informers, and the seeded draws, it had
// before.
func TestDaemonSetControllerIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		c, err := Start(context.Background(), Config{Mock: true, Seed: 1, DaemonSets: on})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.components.isRunning("daemonset-controller"); got != on {
			t.Errorf("DaemonSets %v: daemonset-controller running %v", on, got)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHealthMonitorOptIn: asked for, the health monitor asks the driver at
// start and, beside the mock (no volume health), exits; not asked for, it
// asks nothing.
func TestHealthMonitorOptIn(t *testing.T) {
	for _, asked := range []bool{false, true} {
		c, err := Start(context.Background(), Config{Mock: true, Seed: 1, Realtime: true, HealthMonitor: asked})
		if err != nil {
			t.Fatal(err)
		}
		var calls []string
		for _, e := range c.CSICalls() {
			if e.Actor == "external-health-monitor" {
				calls = append(calls, e.Verb)
			}
		}
		if want := []string{"GetPluginCapabilities", "ControllerGetCapabilities"}; asked != slices.Equal(calls, want) || !asked && len(calls) > 0 {
			t.Errorf("asked %v: the monitor's calls %v (want %v only when asked)", asked, calls, want)
		}
		if c.components.isRunning("external-health-monitor") {
			t.Errorf("asked %v: the monitor runs beside a driver without volume health", asked)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
