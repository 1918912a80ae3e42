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
//
// Faster than the wall clock, the virtual clock starts RealtimeLead behind
// it and never runs ahead of it (see SpedUpFor).
func (l *Loop) RunRealtimeAt(ctx context.Context, speed float64) {
	if speed <= 0 {
		speed = 1
	}
	// The clock first catches up with the wall clock (less the lead), as
	// at speed 1; from then on it runs speed times as fast from this
	// anchor.
	wallStart := time.Now()
	if anchor := wallStart.Add(-RealtimeLead(speed)); anchor.After(l.clock.Now()) {
		l.clock.SetTime(anchor)
	}
	p := pace{wallStart: wallStart, virtualStart: l.clock.Now(), speed: speed}
	for ctx.Err() == nil {
		if now := p.virtualAt(time.Now()); now.After(l.clock.Now()) {
			l.clock.SetTime(now)
		}
		_ = l.Settle(ctx)
		wait := time.Hour
		if next, ok := l.nextTimer(); ok {
			wait = time.Until(p.wallAt(next))
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

// SpedUpFor is how long, in wall time, a realtime loop keeps a speed above
// 1. kubectl computes an object's age from its timestamps and its own wall
// clock, and shows "<invalid>" for a timestamp in its future; a virtual
// clock running faster than the wall clock from the wall clock's now would
// stamp every later write in the future. So it starts RealtimeLead behind
// the wall clock, gains speed-1 seconds on it each second, and once it has
// caught up (after SpedUpFor) runs at the wall clock's pace: it is never
// ahead of it.
const SpedUpFor = 24 * time.Hour

// maxLead bounds RealtimeLead for absurd speeds, well inside what a
// time.Duration holds; such a speed lasts less than SpedUpFor.
const maxLead = 100 * 365 * 24 * time.Hour

// RealtimeLead is how far behind the wall clock a realtime loop's virtual
// clock starts at speed: (speed-1)×SpedUpFor, none at speed 1 or below.
func RealtimeLead(speed float64) time.Duration {
	if speed <= 1 {
		return 0
	}
	lead := (speed - 1) * float64(SpedUpFor)
	if lead >= float64(maxLead) {
		return maxLead
	}
	return time.Duration(lead)
}

// pace maps wall time to a realtime loop's virtual time: speed times as
// fast from (wallStart, virtualStart), and above speed 1 never ahead of
// the wall clock.
type pace struct {
	wallStart, virtualStart time.Time
	speed                   float64
}

// virtualAt is the virtual time at wall time wall.
func (p pace) virtualAt(wall time.Time) time.Time {
	// In floating point: at a high speed the virtual time run would
	// overflow a Duration long after it has caught up.
	run := float64(wall.Sub(p.wallStart)) * p.speed
	if p.speed > 1 && run >= float64(wall.Sub(p.virtualStart)) {
		return wall
	}
	return p.virtualStart.Add(time.Duration(run))
}

// wallAt is the wall time at which the virtual clock reaches virtual.
func (p pace) wallAt(virtual time.Time) time.Time {
	w := p.wallStart.Add(time.Duration(float64(virtual.Sub(p.virtualStart)) / p.speed))
	if p.speed > 1 && virtual.After(w) {
		return virtual // reached after catching up, at the wall clock's pace
	}
	return w
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
