package realcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/scenarios"
)

// TestHealthMonitor: asked for, the cluster runs the health monitor beside
// the controller plugin (it says so to the scenario runner), and the
// monitor's first list of the volumes' health, at its start, goes through
// a proxy of its own and is in the timeline under the real sidecar's name;
// the real snapshot components run with the group snapshot feature named.
func TestHealthMonitor(t *testing.T) {
	requireBinaries(t)
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DriverBinary: testenv.CsisimBinary(t), Log: &log, HealthMonitor: true})
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, tail(log.String(), 80))
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	var _ scenarios.HealthMonitored = c
	if !c.RunsHealthMonitor() {
		t.Error("RunsHealthMonitor() = false for a cluster started with HealthMonitor")
	}
	deadline := time.Now().Add(30 * time.Second)
	for !listedBy(c, healthMonitorBinary) {
		if time.Now().After(deadline) {
			t.Fatalf("no ControllerListVolumeHealth by %s in the timeline 30 s after the start:\n%s", healthMonitorBinary, tail(log.String(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The real snapshot components run with the group snapshot feature
	// named, and find its CRDs (without them they turn it off).
	pids := c.PIDs()
	for _, name := range []string{realkube.SnapshotController, realkube.CSISnapshotter} {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Contains(cmdline, []byte("--feature-gates=CSIVolumeGroupSnapshot=true")) {
			t.Errorf("%s runs as %q, without the group snapshot feature gate", name, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
	if bytes.Contains(log.Bytes(), []byte("disabling the VolumeGroupSnapshot feature")) {
		t.Errorf("a snapshot component turned group snapshots off:\n%s", tail(log.String(), 40))
	}
}

// listedBy reports whether actor's ControllerListVolumeHealth is in the
// timeline.
func listedBy(c *Cluster, actor string) bool {
	for _, e := range c.CSICalls() {
		if e.Verb == "ControllerListVolumeHealth" && e.Actor == actor {
			return true
		}
	}
	return false
}
