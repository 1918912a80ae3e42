package scenarios

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// TimedFault is a fault the runner injects when the run's virtual time
// reaches At, whatever step is running then: the hook a fault schedule
// that is not written as steps (csisim run --nemesis) fires through.
type TimedFault struct {
	// At is the virtual time since the first step started.
	At    time.Duration
	Fault fault.Fault
}

// FiredFault is a timed fault that fired, with where in the scenario: in
// step Step (1-based), Offset after that step started. A fault fires only
// while the simulation runs (in a wait or a sleep), or at Offset 0 as a
// step starts when it fell due in a step that took no virtual time; so a
// scenario with the fault written as a step at that place (after a sleep
// of Offset, for a wait or sleep) does the same.
type FiredFault struct {
	TimedFault
	Step   int
	Offset time.Duration
}

// TimedFaultError is a timed fault the backend failed to inject; it fails
// the step that was running.
type TimedFaultError struct {
	TimedFault
	Err error
}

func (e *TimedFaultError) Error() string {
	return fmt.Sprintf("timed fault %s at %s: %v", e.Fault.Describe(), formatDuration(e.At), e.Err)
}

func (e *TimedFaultError) Unwrap() error { return e.Err }

// timedFaults are a run's timed faults still to fire, soonest first, and
// the place the run has reached, to record where each fired.
type timedFaults struct {
	pending   []TimedFault
	started   time.Time // when the first step started
	step      int
	stepStart time.Time
	fired     []FiredFault
	// inForceUntil is when the last fired fault that lasts a while stops
	// acting (zero: none does).
	inForceUntil time.Time
}

func newTimedFaults(faults []TimedFault) *timedFaults {
	pending := slices.Clone(faults)
	slices.SortStableFunc(pending, func(a, b TimedFault) int { return cmp.Compare(a.At, b.At) })
	return &timedFaults{pending: pending}
}

// checkTimed refuses timed faults the backend cannot fire at virtual
// times, before anything runs, as fault steps are refused.
func checkTimed(faults []TimedFault, b Backend) error {
	if len(faults) == 0 {
		return nil
	}
	if _, ok := b.(Simulated); !ok {
		return errors.New("timed faults need a backend on virtual time (the simulator)")
	}
	inj, ok := b.(fault.Injector)
	if !ok {
		return errors.New("timed faults need a backend that can inject faults")
	}
	for _, tf := range faults {
		if err := inj.CanInject(tf.Fault); err != nil {
			return fmt.Errorf("timed fault %s at %s: %w", tf.Fault.Describe(), formatDuration(tf.At), err)
		}
	}
	return nil
}

// nextDue is when the next timed fault falls due, if there is one.
func (tf *timedFaults) nextDue() (time.Time, bool) {
	if tf == nil || len(tf.pending) == 0 {
		return time.Time{}, false
	}
	return tf.started.Add(tf.pending[0].At), true
}

// fireDue injects every timed fault due by now.
func (ex *executor) fireDue(ctx context.Context) error {
	tf := ex.timed
	now := ex.clock.Now()
	for {
		at, ok := tf.nextDue()
		if !ok || at.After(now) {
			return nil
		}
		next := tf.pending[0]
		tf.pending = tf.pending[1:]
		fired := FiredFault{TimedFault: next, Step: tf.step, Offset: now.Sub(tf.stepStart)}
		tf.fired = append(tf.fired, fired)
		if end := now.Add(lasting(next.Fault)); end.After(tf.inForceUntil) {
			tf.inForceUntil = end
		}
		ex.runner.recordTimed(next, tf.step)
		if ex.runner.OnFired != nil {
			ex.runner.OnFired(fired)
		}
		if err := ex.runner.Backend.(fault.Injector).InjectFault(ctx, next.Fault); err != nil {
			return &TimedFaultError{TimedFault: next, Err: err}
		}
	}
}

// runSplit runs the simulation for up to d of virtual time with run, which
// returns context.DeadlineExceeded when its span passed without the step
// being done; it stops at each timed fault due within d to inject it.
func (ex *executor) runSplit(ctx context.Context, d time.Duration, run func(time.Duration) error) error {
	deadline := ex.clock.Now().Add(d)
	for {
		if err := ex.fireDue(ctx); err != nil {
			return err
		}
		at, ok := ex.timed.nextDue()
		if !ok || at.After(deadline) {
			return run(deadline.Sub(ex.clock.Now()))
		}
		if err := run(at.Sub(ex.clock.Now())); !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
}

// recordTimed adds a timed fault's entry to the trace, before the
// backend's own entries for it.
func (r *Runner) recordTimed(tf TimedFault, step int) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Add(trace.Entry{Kind: trace.Fault, Actor: "timed", Verb: string(tf.Fault.Kind), Object: tf.Fault.Describe(),
		Detail: fmt.Sprintf("timed fault due at %s, during step %d", formatDuration(tf.At), step)})
}

// lasting is how long f goes on acting once it fires: an API server
// outage, slowing or throttling ends Duration after it fired, and a write
// slowed just before then lands Latency later; a mount-busy lets its
// mount go For after it fired. Other faults act at once (or until a step
// heals them), so 0.
func lasting(f fault.Fault) time.Duration {
	if f.Kind == fault.MountBusy {
		return f.Busy.For
	}
	if f.API.Duration <= 0 {
		return 0
	}
	return f.API.Duration + f.API.Latency
}

// relistBound is how long outlastTimed waits, at most, for the informers
// a timed fault left blind to list again. client-go's reflector retries
// every 30 s at most, jittered by up to 100 %, and lists after one more
// backoff once the watch is answered: two minutes and a little; longer
// means a reflector that never lists, which is the simulator's fault.
const relistBound = 5 * time.Minute

// outlastTimed runs the simulation, after the last step, until the timed
// faults still acting have ended and every watch they broke is listed
// again: a fault schedule (csisim run --nemesis) draws its faults over the
// scenario's span, so one may still hold the API server down or its writes
// back when the steps are done, or have left a component's informer blind
// until its reflector lists again, and the run's cleanup and the end state
// the invariants judge would then see a cluster caught mid-write or
// mid-catch-up (a VolumeAttachment whose delete is still queued, or one
// whose pod the attach/detach controller has not yet seen go), which no
// real cluster would leave so. The faults due after the last step never
// fire.
func (ex *executor) outlastTimed(ctx context.Context) error {
	tf := ex.timed
	if tf == nil || len(tf.fired) == 0 {
		return nil
	}
	sim, ok := ex.runner.Backend.(Simulated)
	if !ok {
		return nil // checkTimed refused timed faults elsewhere
	}
	if tf.inForceUntil.After(ex.clock.Now()) {
		d := tf.inForceUntil.Sub(ex.clock.Now())
		ex.recordOutlast("wait for the timed faults to end",
			fmt.Sprintf("the steps are done; the timed faults still acting end in %s, and the run waits for them before it cleans up and judges the end", formatDuration(d)))
		if err := sim.RunFor(ctx, d); err != nil {
			return fmt.Errorf("waiting %s for the timed faults still acting to end: %w", formatDuration(d), err)
		}
	}
	return ex.outlastRelists(ctx, sim)
}

// outlastRelists runs the simulation until no informer is waiting for its
// reflector's list (see outlastTimed), for at most relistBound.
func (ex *executor) outlastRelists(ctx context.Context, sim Simulated) error {
	rl, ok := ex.runner.Backend.(Relister)
	if !ok {
		return nil
	}
	blind := rl.Relisting()
	if len(blind) == 0 {
		return nil
	}
	ex.recordOutlast("wait for the broken watches to be listed again",
		fmt.Sprintf("the steps are done; the timed faults ended the watches of %s, and the run waits for their reflectors to list again before it cleans up and judges the end", describeBlind(blind)))
	err := sim.RunUntil(ctx, relistBound, func() (bool, error) { return len(rl.Relisting()) == 0, nil })
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s after the last step, these informers have still not listed again: %s", formatDuration(relistBound), strings.Join(rl.Relisting(), ", "))
	}
	return err
}

// describeBlind says which informers are blind: all of them when they are
// few, else how many and whose ("component resource" each).
func describeBlind(blind []string) string {
	if len(blind) <= 3 {
		return strings.Join(blind, ", ")
	}
	var whose []string
	for _, b := range blind {
		c, _, _ := strings.Cut(b, " ")
		if !slices.Contains(whose, c) {
			whose = append(whose, c)
		}
	}
	return fmt.Sprintf("%d informers (of %s)", len(blind), strings.Join(whose, ", "))
}

func (ex *executor) recordOutlast(verb, detail string) {
	if ex.runner.Recorder != nil {
		ex.runner.Recorder.Add(trace.Entry{Kind: trace.Fault, Actor: "timed", Verb: verb, Detail: detail})
	}
}
