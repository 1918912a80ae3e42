package loop

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunRealtimeAtRunsTheClockFaster(t *testing.T) {
	tests := []struct {
		speed   float64
		minimum time.Duration // virtual time that must have passed in the wall time slept
		maximum time.Duration
	}{
		{speed: 1, minimum: 150 * time.Millisecond, maximum: 2 * time.Second},
		{speed: 50, minimum: 7 * time.Second, maximum: 100 * time.Second},
	}
	for _, tt := range tests {
		l := newLoop(1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		ticks := 0
		l.Every(time.Second, func(context.Context) { ticks++ })
		go func() { defer close(done); l.RunRealtimeAt(ctx, tt.speed) }()
		time.Sleep(200 * time.Millisecond) // the loop sets the clock to the wall clock first
		start := l.Clock().Now()
		time.Sleep(200 * time.Millisecond)
		passed := l.Clock().Since(start)
		cancel()
		<-done
		if passed < tt.minimum || passed > tt.maximum {
			t.Errorf("speed %v: %v of virtual time passed in 200ms, want between %v and %v", tt.speed, passed, tt.minimum, tt.maximum)
		}
		if tt.speed > 1 && ticks < 7 {
			t.Errorf("speed %v: a 1s timer fired %d times in 400ms of wall time, want at least 7", tt.speed, ticks)
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
