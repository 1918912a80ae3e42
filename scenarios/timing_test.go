package scenarios

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/timing"
)

// TestClusterTiming: cluster.timing: {speedup: N} is read, and its
// mistakes reported at their line.
func TestClusterTiming(t *testing.T) {
	s, err := Parse("x.yaml", []byte("cluster:\n  nodes: [node-a]\n  timing: {speedup: 10}\nsteps:\n  - sleep: 1s\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if s.Cluster.Timing != (timing.Timing{Speedup: 10}) {
		t.Errorf("timing %+v, want speedup 10", s.Cluster.Timing)
	}
	if s, err := Parse("x.yaml", []byte("cluster:\n  timing: {speedup: 4}\nsteps:\n  - sleep: 1s\n"), t.TempDir()); err != nil || s.Cluster.Timing.Speedup != 4 {
		t.Errorf("without nodes: %+v, %v", s, err)
	}
	for src, want := range map[string]string{
		"  timing: {speedup: 1}\n":      "x.yaml:3: speedup 1 changes nothing",
		"  timing: {speedup: 21}\n":     "x.yaml:3: timing speedup 21: want 1 to 20",
		"  timing: {speedup: fast}\n":   "x.yaml:3: speedup must be a whole number",
		"  timing: {}\n":                "x.yaml:3: timing needs speedup",
		"  timing: {graceperiod: 5s}\n": `x.yaml:3: unknown field "graceperiod"; timing takes speedup`,
	} {
		_, err := Parse("x.yaml", []byte("cluster:\n  nodes: [node-a]\n"+src+"steps:\n  - sleep: 1s\n"), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", src, err, want)
		}
	}
}

// timedBackend is a backend started with a timing.
type timedBackend struct {
	fakeBackend
	t timing.Timing
}

func (b timedBackend) Timing() timing.Timing { return b.t }

// TestRunnerRefusesAnotherTiming: a scenario runs only on a backend with
// its timing; one that cannot say (not Timed) has v1.37's.
func TestRunnerRefusesAnotherTiming(t *testing.T) {
	sped := &Scenario{Name: "x", Cluster: Cluster{Timing: timing.Timing{Speedup: 10}}}
	plain := &Scenario{Name: "x"}
	for _, tc := range []struct {
		s    *Scenario
		b    Backend
		want string
	}{
		{sped, fakeBackend{}, "it asks for timing sped up 10 times (cluster.timing), and this backend was started with v1.37's timing"},
		{sped, timedBackend{t: timing.Timing{Speedup: 5}}, "started with timing sped up 5 times"},
		{plain, timedBackend{t: timing.Timing{Speedup: 10}}, "it asks for v1.37's timing"},
	} {
		_, err := (&Runner{Backend: tc.b}).Run(context.Background(), tc.s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	for _, tc := range []struct{ want, have timing.Timing }{{timing.Timing{Speedup: 10}, timing.Timing{Speedup: 10}}, {timing.Timing{}, timing.Timing{Speedup: 1}}} {
		if why := timingRefusal(tc.want, tc.have); why != "" {
			t.Errorf("%+v on %+v refused: %s", tc.want, tc.have, why)
		}
	}
}

// TestSpeedUp: the cluster's timing and the scenario's sleeps, watches and
// API outages divided; timeouts and the scenario it was made from as they
// were.
func TestSpeedUp(t *testing.T) {
	src := "steps:\n  - sleep: 5m\n  - wait: {object: pod/a, gone: true, timeout: 6m}\n" +
		"  - consistently: {object: pod/a, gone: true, for: 1m}\n  - apiServerDown: {duration: 40s}\nfinally:\n  - sleep: 10s\n"
	s, err := Parse("x.yaml", []byte(src), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := s.SpeedUp(10)
	if err != nil {
		t.Fatal(err)
	}
	if fast.Cluster.Timing.Speedup != 10 || s.Cluster.Timing.Scaled() {
		t.Errorf("timing %+v (was %+v), want speedup 10 on the copy only", fast.Cluster.Timing, s.Cluster.Timing)
	}
	got := []time.Duration{fast.Steps[0].Sleep.Duration, fast.Steps[1].Wait.Timeout, fast.Steps[2].Consistently.For,
		fast.Steps[3].Fault.API.Duration, fast.Finally[0].Sleep.Duration, s.Steps[0].Sleep.Duration, s.Steps[3].Fault.API.Duration}
	want := []time.Duration{30 * time.Second, 6 * time.Minute, 6 * time.Second, 4 * time.Second, time.Second, 5 * time.Minute, 40 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("durations %v, want %v", got, want)
	}
	if _, err := fast.SpeedUp(2); err == nil || !strings.Contains(err.Error(), "cannot be sped up again") {
		t.Errorf("speeding up a sped-up scenario: %v", err)
	}
	if _, err := s.SpeedUp(timing.MaxSpeedup + 1); err == nil {
		t.Errorf("speedup %d accepted", timing.MaxSpeedup+1)
	}
}
