package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// consistently reads a consistently: step: the fields of wait, with for:
// (how long the check must hold) instead of timeout:.
func (p *parser) consistently(n *yaml.Node) *Consistently {
	f, ok := p.mapping(n, actionConsistently, append(checkFields, "for")...)
	if !ok {
		return nil
	}
	c := &Consistently{Check: p.check(n, f)}
	if !f.has("for") {
		p.fail(n, "consistently needs for: (how long the check must hold, e.g. 30s)")
		return nil
	}
	c.For, _ = p.duration(f.vals["for"], "for")
	if len(c.Save) > 0 {
		p.fail(f.keys["save"], "save applies to wait and assert, not to consistently (which holds on many objects over time)")
	}
	return c
}

// consistently looks at the check for c.For and fails at the first look
// where it does not hold, saying when and what it saw. On a simulated
// backend the time is virtual: the simulation runs for c.For, looking
// whenever the cluster is quiet.
func (ex *executor) consistently(ctx context.Context, c *Consistently) (stepOutcome, error) {
	start := ex.clock.Now()
	var (
		broken  bool
		lastErr error
		seen    verdict
		when    time.Duration
	)
	// look says whether the check stopped holding.
	look := func(lctx context.Context) bool {
		v, _, err := ex.look(lctx, &c.Check)
		if err != nil {
			lastErr = err
			return false // a failed look says nothing about the condition
		}
		lastErr = nil
		if !v.held {
			broken, seen, when = true, v, ex.clock.Since(start)
		}
		return broken
	}
	if sim, ok := ex.runner.Backend.(Simulated); ok {
		err := ex.runSplit(ctx, c.For, func(d time.Duration) error {
			return sim.RunUntil(ctx, d, func() (bool, error) { return look(ctx), nil })
		})
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return stepOutcome{}, fmt.Errorf("stopped checking %s: %w", c.expectation(), err)
		}
		if ctx.Err() != nil {
			return stepOutcome{}, fmt.Errorf("stopped checking %s: %w", c.expectation(), ctx.Err())
		}
	} else {
		deadline := ex.clock.NewTimer(c.For)
		defer deadline.Stop()
		ticker := ex.clock.NewTicker(ex.runner.pollInterval())
		defer ticker.Stop()
	loop:
		for !look(ctx) {
			select {
			case <-ticker.C():
			case <-deadline.C():
				// One last look at the end of the span.
				look(ctx)
				break loop
			case <-ctx.Done():
				return stepOutcome{}, fmt.Errorf("stopped checking %s: %w", c.expectation(), ctx.Err())
			}
		}
	}
	if broken {
		msg := fmt.Sprintf("%s held for %s of %s, then not; seen: %s", c.expectation(), formatDuration(when), formatDuration(c.For), seen.seen)
		if seen.explain != "" {
			msg += "\n" + seen.explain
		}
		return stepOutcome{}, &conditionError{expected: c.expectation() + " for " + formatDuration(c.For), observed: seen.seen, msg: msg}
	}
	if lastErr != nil {
		return stepOutcome{}, fmt.Errorf("checking %s: %w", c.expectation(), lastErr)
	}
	return stepOutcome{detail: fmt.Sprintf("%s for %s", c.expectation(), formatDuration(c.For))}, nil
}
