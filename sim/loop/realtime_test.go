package loop

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunRealtimeAtRunsTheClockFaster(t *testing.T) {
	tests := []struct {
		speed    float64
		min, max int // ticks of a 1 s timer in half a second of wall time
	}{
		// The timer is due at once: the clock first jumps to the wall clock.
		{speed: 1, min: 1, max: 1},
		{speed: 50, min: 6, max: 27},
	}
	for _, tt := range tests {
		l := newLoop(1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		ticks := 0
		l.Every(time.Second, func(context.Context) { ticks++ })
		go func() { defer close(done); l.RunRealtimeAt(ctx, tt.speed) }()
		time.Sleep(500 * time.Millisecond)
		cancel()
		<-done
		if ticks < tt.min || ticks > tt.max {
			t.Errorf("speed %v: a 1 s timer fired %d times in 500ms of wall time, want %d to %d", tt.speed, ticks, tt.min, tt.max)
		}
	}
}

func TestDoRunsInTheLoop(t *testing.T) {
	l := newLoop(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.RunRealtime(ctx) }()
	ran := false
	want := errors.New("from the job")
	if err := l.Do(ctx, func() error { ran = l.active.Load() > 0; return want }); !errors.Is(err, want) {
		t.Errorf("Do() = %v, want the job's error", err)
	}
	if !ran {
		t.Error("Do ran fn outside a job of the loop")
	}
	cancel()
	<-done
	l.Stop()
	if err := l.Do(context.Background(), func() error { return nil }); !errors.Is(err, ErrStopped) {
		t.Errorf("Do() after Stop = %v, want ErrStopped", err)
	}
}

// TestRealtimeClockNeverRunsAheadOfTheWallClock: faster than the wall
// clock, the virtual clock starts RealtimeLead behind it, runs speed
// times as fast until it has caught up after SpedUpFor, and from then on
// at the wall clock's pace; at speed 1 it is the wall clock.
func TestRealtimeClockNeverRunsAheadOfTheWallClock(t *testing.T) {
	wallStart := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, speed := range []float64{1, 1.5, 20, 1e9} {
		p := pace{wallStart: wallStart, virtualStart: wallStart.Add(-RealtimeLead(speed)), speed: speed}
		for _, after := range []time.Duration{0, time.Second, time.Hour, SpedUpFor - time.Second, SpedUpFor, 3 * SpedUpFor} {
			wall := wallStart.Add(after)
			v := p.virtualAt(wall)
			if v.After(wall) {
				t.Errorf("speed %v, %v in: the virtual clock is %v ahead of the wall clock", speed, after, v.Sub(wall))
			}
			if back := p.wallAt(v); back.Sub(wall).Abs() > time.Millisecond {
				t.Errorf("speed %v, %v in: wallAt(virtualAt(w)) is %v off w", speed, after, back.Sub(wall))
			}
		}
	}
	p := pace{wallStart: wallStart, virtualStart: wallStart.Add(-RealtimeLead(20)), speed: 20}
	if lead := RealtimeLead(20); lead != 19*SpedUpFor {
		t.Errorf("RealtimeLead(20) = %v, want 19 × SpedUpFor", lead)
	}
	if got := p.virtualAt(wallStart.Add(time.Minute)).Sub(p.virtualStart); got != 20*time.Minute {
		t.Errorf("a minute of wall time at speed 20 is %v of virtual time, want 20m", got)
	}
	caughtUp := wallStart.Add(SpedUpFor)
	if got := p.virtualAt(caughtUp.Add(time.Minute)).Sub(p.virtualAt(caughtUp)); got != time.Minute {
		t.Errorf("after catching up, a minute of wall time is %v of virtual time, want 1m", got)
	}
	if RealtimeLead(1) != 0 || RealtimeLead(0.5) != 0 {
		t.Error("at speed 1 or below the virtual clock starts at the wall clock")
	}
}
