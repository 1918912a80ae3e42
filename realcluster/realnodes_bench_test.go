package realcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
)

// BenchmarkRealNodes measures, in one run, the start of a real cluster
// with one real node (control plane, containerd, kubelet, registration,
// Ready) and the wall time of basic-lifecycle on it and on the simulator,
// and reports their ratio (make bench-realnodes). Root, the real binaries
// and containerd are needed; without them it is skipped.
func BenchmarkRealNodes(b *testing.B) {
	if err := realkube.Available(realkube.BinDir(), append(append([]string{}, realkube.ControlPlaneBinaries...), append(sidecars, realnodes.Kubelet)...)...); err != nil {
		b.Skip(err.Error())
	}
	dir := b.TempDir()
	bin := testenv.CsisimBinary(b)
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "csisim-workload"), "../cmd/csisim-workload")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building csisim-workload: %v\n%s", err, out)
	}
	sc, err := scenarios.Load("../scenarios/library/basic-lifecycle.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for range b.N {
		started := time.Now()
		c, err := Start(ctx, Config{Nodes: []string{"node-1"}, RealNodes: []string{"node-1"}, DriverBinary: bin})
		if err != nil {
			b.Fatal(err)
		}
		startup := time.Since(started)
		runStart := time.Now()
		res, err := (&scenarios.Runner{Backend: c, Recorder: c.Recorder()}).Run(ctx, sc)
		realWall := time.Since(runStart)
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		if err != nil || res.Failed() {
			b.Fatalf("basic-lifecycle on a real node: %v", err)
		}

		simc, err := cluster.Start(ctx, cluster.Config{Nodes: []string{"node-1"}, DriverBinary: bin})
		if err != nil {
			b.Fatal(err)
		}
		simStart := time.Now()
		res, err = (&scenarios.Runner{Backend: simc, Recorder: simc.Recorder(), Clock: simc.Clock()}).Run(ctx, sc)
		simWall := time.Since(simStart)
		if cerr := simc.Close(); err == nil {
			err = cerr
		}
		if err != nil || res.Failed() {
			b.Fatalf("basic-lifecycle on the simulator: %v", err)
		}
		b.ReportMetric(startup.Seconds(), "startup-s")
		b.ReportMetric(realWall.Seconds(), "real-node-run-s")
		b.ReportMetric(simWall.Seconds(), "sim-run-s")
		b.ReportMetric(realWall.Seconds()/simWall.Seconds(), "real/sim")
	}
}
