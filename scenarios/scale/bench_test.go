package scale_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/scenarios/scale"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/trace"
)

// BenchmarkScale runs the scale scenario (N claims and pods on M nodes,
// all Running, all deleted) once per size and reports, as one table row
// each: the wall time per lifecycle, the process's peak RSS during the
// run, and the ratio to the floor — what the run's own CSI calls and API
// writes per lifecycle cost at the gRPC round trip and the store write
// cost measured on the same cluster before the run.
//
//	go test -run '^$' -bench Scale -benchtime 1x ./scenarios/scale/
func BenchmarkScale(b *testing.B) {
	for _, size := range []struct {
		claims, nodes int
		mock          bool
	}{
		{100, 100, true}, {1000, 100, true}, {10000, 100, true},
		{1000, 10, false},
	} {
		driver := "hostpath"
		if size.mock {
			driver = "mock"
		}
		b.Run(fmt.Sprintf("%s/claims=%d/nodes=%d", driver, size.claims, size.nodes), func(b *testing.B) {
			for b.Loop() {
				runScale(b, size.claims, size.nodes, size.mock)
			}
		})
	}
}

func runScale(b *testing.B, claims, nodes int, mock bool) {
	ctx := context.Background()
	text, err := scale.Scenario(scale.Config{Claims: claims, Nodes: nodes})
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scenarios.Parse("scale.yaml", text, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg := cluster.Config{Nodes: sc.Cluster.Nodes, Seed: 1, Mock: mock}
	if !mock {
		cfg.DriverBinary = testenv.CsisimBinary(b)
	}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			b.Error(err)
		}
	}()
	rtt, write := measureFloor(b, c)
	resetPeakRSS()
	start := time.Now()
	_, err = (&scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock()}).Run(ctx, sc)
	wall := time.Since(start)
	if err != nil { // a failed step or a broken invariant
		b.Fatalf("scale run: %v", err)
	}
	var csiCalls, apiWrites int
	for _, e := range c.Recorder().Entries() {
		switch e.Kind {
		case trace.CSI:
			csiCalls++
		case trace.API:
			apiWrites++
		}
	}
	perLifecycle := wall / time.Duration(claims)
	floor := time.Duration(csiCalls/claims)*rtt + time.Duration(apiWrites/claims)*write
	b.ReportMetric(float64(perLifecycle.Microseconds())/1000, "ms/lifecycle")
	b.ReportMetric(float64(peakRSS())/(1<<20), "MiB-peak-RSS")
	b.ReportMetric(float64(perLifecycle)/float64(floor), "x-floor")
	b.ReportMetric(float64(csiCalls)/float64(claims), "csi-calls/lifecycle")
	b.ReportMetric(float64(apiWrites)/float64(claims), "api-writes/lifecycle")
	b.ReportMetric(float64(rtt.Microseconds()), "µs-grpc-rtt")
	b.ReportMetric(float64(write.Microseconds()), "µs-api-write")
}

// measureFloor times the two things a lifecycle cannot do without: a gRPC
// round trip to the controller plugin through its fault proxy (Probe), and
// an API write through client-go (a ConfigMap update).
func measureFloor(b *testing.B, c *cluster.Cluster) (rtt, write time.Duration) {
	ctx := context.Background()
	conn, err := csiclient.Dial(c.ControllerEndpoint(), "floor", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const rounds = 500
	if _, err := conn.Identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for range rounds {
		if _, err := conn.Identity.Probe(ctx, &csi.ProbeRequest{}); err != nil {
			b.Fatal(err)
		}
	}
	rtt = time.Since(start) / rounds
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "floor"}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	for i := range rounds {
		cm.Data = map[string]string{"i": strconv.Itoa(i)}
		if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	write = time.Since(start) / rounds
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "floor", metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	return rtt, write
}

// resetPeakRSS starts the kernel's count of the process's peak RSS afresh
// (proc(5): writing 5 to clear_refs resets VmHWM).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set since the last reset, in bytes.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestMain removes the csisim binary the benchmarks built.
func TestMain(m *testing.M) { testenv.Main(m) }
