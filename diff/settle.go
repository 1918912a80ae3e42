package diff

import (
	"context"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// simulation is what settling needs of the simulator: its virtual clock
// and running it.
type simulation interface {
	Clock() *testingclock.FakeClock
	// RunUntil runs the work that is ready until cond holds or nothing is
	// left to do at this instant.
	RunUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error
	// RunFor runs the simulation for d of virtual time.
	RunFor(ctx context.Context, d time.Duration) error
}

// settleVirtual runs sim until its virtual clock has reached until and its
// snapshot has not changed for quiet of virtual time, looking every
// pollSettle, as the real cluster is watched. It gives up (false) when
// there is no quiet by timeout after until, or the simulation fails.
//
// until is the time at which the real cluster's snapshot of the same step
// was taken, on the simulation's clock: settling by quiet alone would stop
// the simulation before a timer due later (a scheduler backoff of up to
// 10 s, a sidecar's retry), which the real cluster, running in real time
// through the step and its settling, has already seen fire.
func settleVirtual(ctx context.Context, sim simulation, snapshot func() (Snapshot, error), until time.Time, quiet, timeout time.Duration) bool {
	clk := sim.Clock()
	if now := clk.Now(); now.After(until) {
		until = now
	}
	deadline := until.Add(timeout)
	var last Snapshot
	var since time.Time
	for clk.Now().Before(deadline) {
		if err := sim.RunUntil(ctx, 0, func() (bool, error) { return true, nil }); err != nil {
			return false
		}
		s, err := snapshot()
		if err != nil {
			return false
		}
		if since.IsZero() || !s.Equal(last) {
			last, since = s, clk.Now()
		} else if clk.Since(since) >= quiet && !clk.Now().Before(until) {
			return true
		}
		if err := sim.RunFor(ctx, pollSettle); err != nil {
			return false
		}
	}
	return false
}
