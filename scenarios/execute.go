package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// executor carries out the actions of one run's steps.
type executor struct {
	runner  *Runner
	objects objectStore
	clock   clock.WithTicker

	csi         CSICallSource // nil when the backend cannot see CSI calls
	csiBaseline int           // calls made before the scenario started

	timed *timedFaults // the Runner's timed faults

	// values are the typed driver variables (driverValues).
	values map[string]any

	// borrowed are what the run changed outside its namespace, to be put
	// back (Runner.Restore); nil when it is not.
	borrowed *borrowed
	// others are the UIDs of volume objects on the shared cluster that
	// are not the run's (othersObjects); lists leave them out.
	others map[string]bool
	// confine are the workers the run's pods may run on (confinePods);
	// nil for any.
	confine []string
}

// firstOf is the first of values that is not empty.
func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// stepOutcome is what a passing step reports.
type stepOutcome struct {
	detail string
	saved  map[string]string
}

func (ex *executor) execute(ctx context.Context, st Step) (stepOutcome, error) {
	switch {
	case st.Apply != nil:
		return ex.apply(ctx, st.Apply)
	case st.Wait != nil:
		return ex.wait(ctx, st.Wait)
	case st.Consistently != nil:
		return ex.consistently(ctx, st.Consistently)
	case st.Assert != nil:
		return ex.assert(ctx, st.Assert)
	case st.Delete != nil:
		return ex.delete(ctx, st.Delete)
	case st.Patch != nil:
		return ex.patch(ctx, st.Patch)
	case st.Sleep != nil:
		return ex.sleep(ctx, st.Sleep)
	case st.Fault != nil:
		inj, ok := ex.runner.Backend.(fault.Injector)
		if !ok {
			return stepOutcome{}, fmt.Errorf("this backend cannot inject %s", st.Fault.Kind)
		}
		if err := inj.InjectFault(ctx, *st.Fault); err != nil {
			return stepOutcome{}, fmt.Errorf("%s: %w", st.Fault.Describe(), err)
		}
		return stepOutcome{detail: st.Fault.Describe()}, nil
	}
	return stepOutcome{}, errors.New("step has no action")
}

func (ex *executor) apply(ctx context.Context, a *Apply) (stepOutcome, error) {
	done := make([]string, 0, len(a.Objects))
	adapter, _ := ex.runner.Backend.(ManifestAdapter)
	for _, m := range a.Objects {
		obj := &unstructured.Unstructured{Object: m.Object}
		if adapter != nil {
			obj = obj.DeepCopy() // the scenario may run again, elsewhere
			if err := adapter.AdaptManifest(obj); err != nil {
				return stepOutcome{}, fmt.Errorf("%s:%d: apply %s: %w", m.File, m.Line, m.Describe(), err)
			}
		}
		if len(ex.confine) > 0 {
			if adapter == nil {
				obj = obj.DeepCopy()
			}
			if err := confinePods(obj, ex.confine); err != nil {
				return stepOutcome{}, fmt.Errorf("%s:%d: apply %s: %w", m.File, m.Line, m.Describe(), err)
			}
		}
		if err := ex.borrow(ctx, manifestRef(obj.Object), firstOf(obj.GetNamespace(), a.Namespace)); err != nil {
			return stepOutcome{}, fmt.Errorf("%s:%d: apply %s: %w", m.File, m.Line, m.Describe(), err)
		}
		applied, err := ex.objects.apply(ctx, obj, a.Namespace)
		if err != nil {
			return stepOutcome{}, fmt.Errorf("%s:%d: apply %s: %w", m.File, m.Line, m.Describe(), err)
		}
		done = append(done, applied+" "+m.Describe())
	}
	return stepOutcome{detail: strings.Join(done, ", ")}, nil
}

// look evaluates c once. An error means the cluster could not be asked,
// which is different from the check not holding.
func (ex *executor) look(ctx context.Context, c *Check) (verdict, map[string]any, error) {
	if c.CSICalls != nil {
		return c.CSICalls.evaluate(ex.csiCalls()), nil, nil
	}
	if c.Log != "" {
		return ex.lookLog(ctx, c)
	}
	var obj map[string]any
	var err error
	if c.Object.Name == "" {
		obj, err = ex.objects.list(ctx, c.Object.Kind, c.Namespace, c.LabelSelector)
		obj = ownList(obj, ex.others)
	} else {
		obj, err = ex.objects.get(ctx, c.Object, c.Namespace)
	}
	if err != nil {
		return verdict{seen: "error: " + err.Error()}, nil, fmt.Errorf("look up %s: %w", c.Object, err)
	}
	return c.evaluate(obj), obj, nil
}

// csiCalls returns the CSI calls made since the scenario started.
func (ex *executor) csiCalls() []trace.Entry {
	calls := ex.csi.CSICalls()
	if len(calls) >= ex.csiBaseline {
		return calls[ex.csiBaseline:]
	}
	return calls
}

// wait looks until the check holds, the timeout elapses or ctx ends. Errors
// from the API server do not end the wait: they are often transient (a kind
// not installed yet), and the last one is reported if time runs out.
func (ex *executor) wait(ctx context.Context, w *Wait) (stepOutcome, error) {
	if sim, ok := ex.runner.Backend.(Simulated); ok {
		return ex.waitSimulated(ctx, sim, w)
	}
	// A hung API call must not stretch the wait past its timeout either, so
	// the calls also get a real-time deadline.
	callCtx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	deadline := ex.clock.NewTimer(w.Timeout)
	defer deadline.Stop()
	ticker := ex.clock.NewTicker(ex.runner.pollInterval())
	defer ticker.Stop()

	var last verdict // what the last look that finished in time saw
	for {
		v, obj, err := ex.look(callCtx, &w.Check)
		if err == nil && v.held {
			return passed(&w.Check, obj)
		}
		// A look cut short by the deadline itself says nothing about the
		// cluster; report what was seen before it.
		if callCtx.Err() == nil || last.seen == "" {
			last = v
		}
		v = last
		select {
		case <-ticker.C():
			continue
		case <-deadline.C():
		case <-callCtx.Done():
			if ctx.Err() != nil {
				return stepOutcome{}, fmt.Errorf("stopped waiting for %s: %w", w.expectation(), ctx.Err())
			}
			// Otherwise the real-time guard expired: a timeout all the same.
		}
		msg := fmt.Sprintf("timed out after %s waiting for %s; last seen: %s", formatDuration(w.Timeout), w.expectation(), v.seen)
		if v.explain != "" {
			msg += "\n" + v.explain
		}
		msg += ex.hints(ctx)
		return stepOutcome{}, &conditionError{expected: w.expectation(), observed: v.seen, msg: msg}
	}
}

// waitSimulated runs a simulated cluster forward, on its virtual clock,
// until the check holds or the timeout has passed in virtual time.
func (ex *executor) waitSimulated(ctx context.Context, sim Simulated, w *Wait) (stepOutcome, error) {
	var (
		last verdict
		obj  map[string]any
	)
	cond := func() (bool, error) {
		v, o, err := ex.look(ctx, &w.Check)
		last = v
		// The object is kept only for what the check saves from it: a
		// wait for a list of 10,000 objects would otherwise hold the last
		// list while the next one is read.
		if len(w.Check.Save) > 0 {
			obj = o
		}
		return err == nil && v.held, nil
	}
	err := ex.runSplit(ctx, w.Timeout, func(d time.Duration) error { return sim.RunUntil(ctx, d, cond) })
	switch {
	case err == nil:
		return passed(&w.Check, obj)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		msg := fmt.Sprintf("timed out after %s waiting for %s; last seen: %s", formatDuration(w.Timeout), w.expectation(), last.seen)
		if last.explain != "" {
			msg += "\n" + last.explain
		}
		msg += ex.hints(ctx)
		return stepOutcome{}, &conditionError{expected: w.expectation(), observed: last.seen, msg: msg}
	default:
		return stepOutcome{}, fmt.Errorf("stopped waiting for %s: %w", w.expectation(), err)
	}
}

func (ex *executor) assert(ctx context.Context, a *Assert) (stepOutcome, error) {
	v, obj, err := ex.look(ctx, &a.Check)
	if err != nil {
		return stepOutcome{}, err
	}
	if !v.held {
		msg := fmt.Sprintf("expected %s; seen: %s", a.expectation(), v.seen)
		if v.explain != "" {
			msg += "\n" + v.explain
		}
		return stepOutcome{}, &conditionError{expected: a.expectation(), observed: v.seen, msg: msg}
	}
	return passed(&a.Check, obj)
}

// passed reports a check that held, saving the variables it asks for from
// the object it held on.
func passed(c *Check, obj map[string]any) (stepOutcome, error) {
	out := stepOutcome{detail: c.expectation()}
	if len(c.Save) == 0 {
		return out, nil
	}
	out.saved = map[string]string{}
	var shown []string
	for _, sv := range c.Save {
		value, err := evalJSONPath(sv.JSONPath, obj)
		if err != nil {
			return stepOutcome{}, fmt.Errorf("save %s: %w", sv.Name, err)
		}
		if value == "" {
			// An empty variable would silently turn pv/${pv} into "pv/"
			// later; stop here, where the cause is visible.
			return stepOutcome{}, fmt.Errorf("save %s: %s is empty on %s", sv.Name, sv.JSONPath, c.Object)
		}
		out.saved[sv.Name] = value
		shown = append(shown, sv.Name+"="+value)
	}
	out.detail += "; saved " + strings.Join(shown, ", ")
	return out, nil
}

func (ex *executor) delete(ctx context.Context, d *Delete) (stepOutcome, error) {
	if err := ex.borrow(ctx, d.Object, d.Namespace); err != nil {
		return stepOutcome{}, fmt.Errorf("delete %s: %w", d.Object, err)
	}
	found, err := ex.objects.delete(ctx, d.Object, d.Namespace, deleteOpts{Propagation: d.Propagation, Force: d.Force})
	if err != nil {
		return stepOutcome{}, fmt.Errorf("delete %s: %w", d.Object, err)
	}
	if found {
		return stepOutcome{detail: "deleted " + d.Object.String()}, nil
	}
	if d.IgnoreNotFound {
		return stepOutcome{detail: d.Object.String() + " was already gone"}, nil
	}
	return stepOutcome{}, &conditionError{
		expected: d.Object.String() + " to exist",
		observed: seenNotFound,
		msg:      fmt.Sprintf("cannot delete %s: it does not exist (add ignoreNotFound: true if that is expected)", d.Object),
	}
}

func (ex *executor) sleep(ctx context.Context, s *Sleep) (stepOutcome, error) {
	if sim, ok := ex.runner.Backend.(Simulated); ok {
		err := ex.runSplit(ctx, s.Duration, func(d time.Duration) error {
			if err := sim.RunFor(ctx, d); err != nil {
				return err
			}
			return context.DeadlineExceeded // the span is slept
		})
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return stepOutcome{}, fmt.Errorf("sleep interrupted: %w", err)
		}
		return stepOutcome{detail: "slept " + formatDuration(s.Duration)}, nil
	}
	t := ex.clock.NewTimer(s.Duration)
	defer t.Stop()
	select {
	case <-t.C():
		return stepOutcome{detail: "slept " + formatDuration(s.Duration)}, nil
	case <-ctx.Done():
		return stepOutcome{}, fmt.Errorf("sleep interrupted: %w", ctx.Err())
	}
}
