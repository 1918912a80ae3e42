package fakekube_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// BenchmarkBasicLifecycle runs the library's basic-lifecycle scenario on
// the simulator, as `csisim run` does, and reports the API writes it makes
// per second of wall time: the yardstick for what the API server's
// validation (kube-apiserver's strategies, run on every write) costs a run.
//
//	go test -run '^$' -bench BasicLifecycle -benchtime 10x ./fakekube/
func BenchmarkBasicLifecycle(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "csisim")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/csisim").CombinedOutput(); err != nil {
		b.Fatalf("building csisim: %v\n%s", err, out)
	}
	sc, err := scenarios.Load("../scenarios/library/basic-lifecycle.yaml")
	if err != nil {
		b.Fatal(err)
	}
	writes := 0
	began := time.Now()
	for b.Loop() {
		writes += runScenario(b, sc, bin)
	}
	b.ReportMetric(float64(writes)/time.Since(began).Seconds(), "writes/s")
}

// runScenario runs sc on a fresh simulated cluster and returns how many
// API writes the run made.
func runScenario(b *testing.B, sc *scenarios.Scenario, bin string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Zones: sc.Cluster.Zones,
		DriverArgs: sc.Cluster.DriverFlags(profiles.MustDefault()), DriverName: sc.Cluster.DriverName, DriverBinary: bin, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			b.Error(err)
		}
	}()
	if _, err := (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Out: io.Discard}).Run(ctx, sc); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, e := range c.Recorder().Entries() {
		if e.Kind == trace.API {
			n++
		}
	}
	return n
}
