package main

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSweep measures `csisim run --seeds 1..N --parallel 2
// --mock-driver` end to end, in seeds per second of wall time, for the
// basic lifecycle and the node-loss stories (14 and 19 minutes of cluster
// time each). Each iteration is a whole sweep of fresh seeds. The figure
// is reported, never asserted: these machines are shared and noisy.
func BenchmarkSweep(b *testing.B) {
	csisim := filepath.Join(b.TempDir(), "csisim")
	if out, err := exec.Command("go", "build", "-o", csisim, ".").CombinedOutput(); err != nil {
		b.Fatalf("building csisim: %v\n%s", err, out)
	}
	for _, bc := range []struct {
		scenario string
		seeds    int // per iteration
	}{
		{"basic-lifecycle", 40},
		{"node-loss-force-detach", 8},
		{"classic-node-loss-story", 8},
	} {
		b.Run(bc.scenario, func(b *testing.B) {
			file := "../../scenarios/library/" + bc.scenario + ".yaml"
			first, swept, wall := 1, 0, time.Duration(0)
			for b.Loop() {
				seeds := strconv.Itoa(first) + ".." + strconv.Itoa(first+bc.seeds-1)
				first += bc.seeds
				cmd := exec.Command(csisim, "run", "--seeds", seeds, "--parallel", "2", "--mock-driver", file)
				start := time.Now()
				out, err := cmd.CombinedOutput()
				wall += time.Since(start)
				if err != nil {
					b.Errorf("csisim run --seeds %s: %v\n%s", seeds, err, out)
				}
				swept += bc.seeds
			}
			b.ReportMetric(float64(swept)/wall.Seconds(), "seeds/s")
		})
	}
}
