// Delays and hangs, on the wall clock or parked on the caller's virtual
// clock, and ending them early.

package faultproxy

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// InterruptParked ends the delays and hangs parked on the virtual clock
// (Config.Park) now: their callers get Unavailable, as callers of a driver
// that has just died do. The proxy goes on serving.
func (p *Proxy) InterruptParked() { p.InterruptParkedOf("") }

// InterruptParkedOf ends, as InterruptParked does, the parked calls of the
// caller that named itself so in CallerHeader (every parked call for "").
func (p *Proxy) InterruptParkedOf(caller string) {
	p.parksMu.Lock()
	defer p.parksMu.Unlock()
	for _, pc := range p.parks {
		if caller == "" || pc.caller == caller {
			pc.interrupt()
		}
	}
}

// parkedCall is a call parked on the virtual clock: how to end its wait,
// and who made it (CallerHeader).
type parkedCall struct {
	interrupt func()
	caller    string
}

// wait lets d pass, unless the caller gives up or the proxy stops first.
func (p *Proxy) wait(ctx context.Context, d time.Duration, rule string) error {
	if timeout, ok := callerTimeout(ctx); ok && p.cfg.Park != nil {
		return p.park(d, timeout, false, rule, callerOf(ctx))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-p.stopping:
		return status.Errorf(codes.Unavailable, "faultproxy stopped during the delay of rule %s", rule)
	}
}

// hang answers nothing until the caller gives up, limit (if not 0) passes
// or the proxy stops.
func (p *Proxy) hang(ctx context.Context, limit time.Duration, rule string) error {
	if timeout, ok := callerTimeout(ctx); ok && p.cfg.Park != nil {
		return p.park(limit, timeout, true, rule, callerOf(ctx))
	}
	var expired <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-expired:
		return hungFor(rule, limit)
	case <-p.stopping:
		return status.Errorf(codes.Unavailable, "faultproxy stopped while rule %s hung the call", rule)
	}
}

func hungFor(rule string, limit time.Duration) error {
	return status.Errorf(codes.DeadlineExceeded, "faultproxy rule %s hung the call for %s", rule, limit)
}

// park is wait and hang on the caller's virtual clock: d passes (0: never,
// for a hang without limit), unless the caller's timeout comes first, when
// the caller gets what a gRPC client whose deadline passes gets.
func (p *Proxy) park(d, timeout time.Duration, hang bool, rule, caller string) error {
	limit, callerFirst := d, false
	if timeout > 0 && (limit <= 0 || timeout <= limit) {
		limit, callerFirst = timeout, true
	}
	wait, interrupt := p.cfg.Park(limit)
	p.parksMu.Lock()
	p.nextPark++
	id := p.nextPark
	if p.parks == nil {
		p.parks = map[int]parkedCall{}
	}
	p.parks[id] = parkedCall{interrupt: interrupt, caller: caller}
	stopped := p.stopped
	p.parksMu.Unlock()
	if stopped {
		// Still wait: the clock's owner expects the wait it was promised.
		interrupt()
	}
	passed := wait()
	p.parksMu.Lock()
	delete(p.parks, id)
	p.parksMu.Unlock()
	switch {
	case !passed:
		// Cut off (the proxy stopped, or the driver behind it died): what
		// grpc-go says when the server's side of the connection goes.
		return status.Error(codes.Unavailable, "error reading from server: EOF")
	case callerFirst:
		// The words grpc-go's client uses when its deadline passes.
		return status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	case hang:
		return hungFor(rule, limit)
	}
	return nil
}

// callerOf reads the caller a call names in CallerHeader, "" if none.
func callerOf(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(CallerHeader); len(v) > 0 {
		return v[0]
	}
	return ""
}

// callerTimeout reads the timeout a caller on a virtual clock sent in
// TimeoutHeader.
func callerTimeout(ctx context.Context) (time.Duration, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(TimeoutHeader)
	if len(v) == 0 {
		return 0, false
	}
	d, err := time.ParseDuration(v[0])
	if err != nil {
		return 0, false
	}
	return d, true
}
