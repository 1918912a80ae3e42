package scenarios

import (
	"fmt"
	"time"

	"github.com/csisim/csisim/timing"
)

// SpeedUp is s told n times faster, for a judge that cannot wait a quarter
// of an hour for a node-loss story (csisim diff --speedup): the cluster's
// timing of node loss divided by n (cluster.timing, package timing), and
// with it the scenario's own waits for that timing — its sleeps, how long
// a consistently step watches, how long an API server fault lasts. A wait's
// timeout is a bound, not a wait, and stays as written, as do the CSI
// faults' delays, which stand for the driver's latency. s is left as it
// is. A scenario that sets cluster.timing itself is told at its own pace.
func (s *Scenario) SpeedUp(n int) (*Scenario, error) {
	t := timing.Timing{Speedup: n}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if s.Cluster.Timing.Scaled() {
		return nil, fmt.Errorf("%s sets its own timing (cluster.timing, sped up %d times): it cannot be sped up again", s.File, s.Cluster.Timing.Speedup)
	}
	out := *s
	if !t.Scaled() {
		return &out, nil
	}
	out.Cluster.Timing = t
	out.Steps = spedUpSteps(s.Steps, n)
	out.Finally = spedUpSteps(s.Finally, n)
	return &out, nil
}

// spedUpSteps are copies of steps with their waits divided by n; what
// they share with steps is not written.
func spedUpSteps(steps []Step, n int) []Step {
	if steps == nil {
		return nil
	}
	out := make([]Step, len(steps))
	div := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	for i, st := range steps {
		switch {
		case st.Sleep != nil:
			st.Sleep = &Sleep{Duration: div(st.Sleep.Duration)}
		case st.Consistently != nil:
			c := *st.Consistently
			c.For = div(c.For)
			st.Consistently = &c
		case st.Fault != nil && st.Fault.API.Duration > 0:
			f := *st.Fault
			f.API.Duration = div(f.API.Duration)
			st.Fault = &f
		case st.Fault != nil && st.Fault.Busy.For > 0:
			f := *st.Fault
			f.Busy.For = div(f.Busy.For)
			st.Fault = &f
		}
		out[i] = st
	}
	return out
}
