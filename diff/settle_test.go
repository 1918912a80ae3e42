package diff

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// timerSim is a simulation with one timer: at fireAt its state changes.
type timerSim struct {
	clk    *testingclock.FakeClock
	fireAt time.Time
}

func (s *timerSim) Clock() *testingclock.FakeClock { return s.clk }
func (s *timerSim) RunUntil(context.Context, time.Duration, func() (bool, error)) error {
	return nil
}
func (s *timerSim) RunFor(_ context.Context, d time.Duration) error {
	s.clk.Step(d)
	return nil
}

func (s *timerSim) snapshot() (Snapshot, error) {
	phase := "Pending"
	if !s.clk.Now().Before(s.fireAt) {
		phase = "Running"
	}
	return Snapshot{Objects: map[string]Object{"pod": {Kind: "Pod", Name: "p", Exists: true, Phase: phase}}}, nil
}

func TestSettleVirtual(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		until     time.Duration // after t0
		wantPhase string
	}{
		// Quiet alone: a second of quiet passes before the timer at 3 s.
		{"quiet alone", 0, "Pending"},
		// The real snapshot was taken at 4 s: the timer has fired.
		{"until the real snapshot's time", 4 * time.Second, "Running"},
	} {
		sim := &timerSim{clk: testingclock.NewFakeClock(t0), fireAt: t0.Add(3 * time.Second)}
		if !settleVirtual(context.Background(), sim, sim.snapshot, t0.Add(tc.until), time.Second, 15*time.Second) {
			t.Errorf("%s: did not settle", tc.name)
			continue
		}
		s, _ := sim.snapshot()
		if got := s.Objects["pod"].Phase; got != tc.wantPhase {
			t.Errorf("%s: settled at %v with the pod %s, want %s", tc.name, sim.clk.Since(t0), got, tc.wantPhase)
		}
		if sim.clk.Now().Before(t0.Add(tc.until)) {
			t.Errorf("%s: settled at %v, before %v", tc.name, sim.clk.Since(t0), tc.until)
		}
	}
}
