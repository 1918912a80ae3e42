package loop

import (
	"context"
	"errors"
	"time"
)

// RunRealtimeAt runs the simulation with the virtual clock following the
// wall clock speed times as fast (speed 1: the wall clock itself), until
// ctx ends. A classroom runs the six minutes of a force detach in half a
// minute at speed 12; each item of work still runs with the clock standing
// still, as in every loop, so only the waits between them shrink.
func (l *Loop) RunRealtimeAt(ctx context.Context, speed float64) {
	if speed <= 0 {
		speed = 1
	}
	// The clock first catches up with the wall clock, as at speed 1;
	// from then on it runs speed times as fast from this anchor.
	wallStart := time.Now()
	if wallStart.After(l.clock.Now()) {
		l.clock.SetTime(wallStart)
	}
	virtualStart := l.clock.Now()
	virtualNow := func() time.Time {
		return virtualStart.Add(time.Duration(float64(time.Since(wallStart)) * speed))
	}
	for ctx.Err() == nil {
		if now := virtualNow(); now.After(l.clock.Now()) {
			l.clock.SetTime(now)
		}
		_ = l.Settle(ctx)
		wait := time.Hour
		if next, ok := l.nextTimer(); ok {
			wait = time.Duration(float64(next.Sub(l.clock.Now())) / speed)
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-l.wakeCh:
		case <-t.C:
		}
		t.Stop()
	}
}

// ErrStopped is what Do returns once the loop has stopped for good.
var ErrStopped = errors.New("the simulation has stopped")

// Do runs fn as a job of the loop, between its other work, and returns
// fn's error: the way to change a simulation from outside while
// RunRealtimeAt owns it (csisim serve's fault endpoint), since the loop
// runs one thing at a time. If ctx ends first Do returns its error and fn
// may still run later.
func (l *Loop) Do(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	l.addTimer(0, func() { done <- fn() }, true)
	l.wake()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-l.stopped:
		return ErrStopped
	}
}
