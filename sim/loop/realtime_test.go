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
