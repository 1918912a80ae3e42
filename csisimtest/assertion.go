package csisimtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Observed is an object as the cluster holds it at the moment a matcher
// looks: what Eventually, Consistently and Expect hand this package's
// matchers in place of an object. Object is nil once the object is gone.
type Observed struct {
	Cluster *Cluster
	// Ref says which object this is, e.g. "PersistentVolumeClaim default/data".
	Ref    string
	Object *unstructured.Unstructured
	ref    objectRef
	// uid is the object's UID when it was handed over, to tell it from a
	// later object of the same name; empty if it had none yet.
	uid string
	// given is the object as it was handed over, for its Go type.
	given runtime.Object
}

// clusterMatcher marks the matchers of this package: they are handed an
// *Observed (or the *Cluster), where Gomega's own are handed the object.
type clusterMatcher interface {
	types.GomegaMatcher
	observesCluster()
}

// Assertion is an assertion that runs the cluster: Eventually runs it
// until the matcher holds, Consistently for as long as it must hold.
type Assertion struct {
	c            *Cluster
	actual       any
	timeout      time.Duration
	consistently bool
}

// Eventually runs the cluster forward, on its virtual clock, until the
// matcher given to Should holds for actual, or until the timeout
// (Options.Timeout, or WithTimeout) has passed in virtual time, which
// fails the test with the matcher's message about what it saw last. The
// matcher is asked again whenever an API object or the timeline has
// changed, so no change is missed and a wait costs no wall time.
//
// actual is an object (a typed one such as *corev1.Pod, an
// *unstructured.Unstructured — anything Apply takes or returns), read
// afresh from the cluster each time; the Cluster itself, for
// HaveCSICalls and HaveNoInvariantViolations; or a function, called each
// time, whose value (or first value, with a nil error as its second) is
// the actual. This package's matchers get an object as an *Observed;
// Gomega's own matchers get it as the Go type it was given as (nil once
// it is gone), so c.Eventually(pvc).Should(HaveField("Status.Phase",
// corev1.ClaimBound)) works too.
func (c *Cluster) Eventually(actual any) *Assertion {
	return &Assertion{c: c, actual: actual, timeout: c.timeout}
}

// Consistently runs the cluster for the timeout (Options.Timeout, or
// WithTimeout) of virtual time and fails the test as soon as the matcher
// stops holding for actual (taken as Eventually takes it).
func (c *Cluster) Consistently(actual any) *Assertion {
	return &Assertion{c: c, actual: actual, timeout: c.timeout, consistently: true}
}

// WithTimeout sets how much virtual time the assertion runs the cluster for.
func (a *Assertion) WithTimeout(d time.Duration) *Assertion {
	a.timeout = d
	return a
}

// Should runs the cluster until m holds (Eventually) or while it holds
// (Consistently); on failure it fails the test and returns false.
// description, like Gomega's, is a format string and its arguments, or a
// func() string, that starts the failure message.
func (a *Assertion) Should(m types.GomegaMatcher, description ...any) bool {
	a.c.t.Helper()
	return a.run(m, true, description)
}

// ShouldNot is Should with m negated.
func (a *Assertion) ShouldNot(m types.GomegaMatcher, description ...any) bool {
	a.c.t.Helper()
	return a.run(m, false, description)
}

// poll is one look: whether the matcher gave the wanted answer, and what
// it was asked about.
type poll struct {
	ok     bool
	actual any
	err    error
}

func (a *Assertion) run(m types.GomegaMatcher, want bool, description []any) bool {
	a.c.t.Helper()
	c := a.c
	actual, err := c.handOver(a.actual)
	if err != nil {
		c.t.Fatalf("csisimtest: %v", err)
		return false
	}
	var last poll
	look := func() poll {
		got, err := c.resolve(actual, m)
		if err != nil {
			return poll{err: err}
		}
		matched, err := m.Match(got)
		return poll{ok: err == nil && matched == want, actual: got, err: err}
	}
	started := c.Now()
	var runErr error
	if a.consistently {
		runErr = c.sim.RunUntil(c.ctx, a.timeout, func() (bool, error) {
			last = look()
			return !last.ok, nil // a look that fails ends the run early
		})
		if errors.Is(runErr, context.DeadlineExceeded) {
			return true
		}
		if runErr == nil {
			c.t.Fatalf("%s", failure(description, fmt.Sprintf("Failed after %s of virtual time (of %s) of Consistently",
				c.Now().Sub(started), a.timeout), m, want, last))
			return false
		}
	} else {
		runErr = c.sim.RunUntil(c.ctx, a.timeout, func() (bool, error) {
			last = look()
			return last.ok, nil
		})
		if runErr == nil {
			return true
		}
		if errors.Is(runErr, context.DeadlineExceeded) {
			c.t.Fatalf("%s", failure(description, fmt.Sprintf("Timed out after %s of virtual time", a.timeout), m, want, last))
			return false
		}
	}
	c.t.Fatalf("csisimtest: running the cluster: %v", runErr)
	return false
}

// Expect asks the matcher given to To once, about actual now, without
// running the cluster; actual is taken as Eventually takes it.
func (c *Cluster) Expect(actual any) *Expectation {
	return &Expectation{c: c, actual: actual}
}

// Expectation is an assertion about the cluster as it is.
type Expectation struct {
	c      *Cluster
	actual any
}

// To fails the test, and returns false, unless m holds for the actual.
func (e *Expectation) To(m types.GomegaMatcher, description ...any) bool {
	e.c.t.Helper()
	return e.check(m, true, description)
}

// NotTo fails the test, and returns false, if m holds for the actual.
func (e *Expectation) NotTo(m types.GomegaMatcher, description ...any) bool {
	e.c.t.Helper()
	return e.check(m, false, description)
}

func (e *Expectation) check(m types.GomegaMatcher, want bool, description []any) bool {
	e.c.t.Helper()
	actual, err := e.c.handOver(e.actual)
	if err == nil {
		actual, err = e.c.resolve(actual, m)
	}
	if err != nil {
		e.c.t.Fatalf("csisimtest: %v", err)
		return false
	}
	matched, err := m.Match(actual)
	p := poll{ok: err == nil && matched == want, actual: actual, err: err}
	if !p.ok {
		e.c.t.Fatalf("%s", failure(description, "", m, want, p))
	}
	return p.ok
}

// failure is the message of a failed assertion: the description, what
// happened, and the matcher's account of what it saw.
func failure(description []any, what string, m types.GomegaMatcher, want bool, p poll) string {
	var b strings.Builder
	if d := describe(description); d != "" {
		b.WriteString(d + "\n")
	}
	if what != "" {
		b.WriteString(what + ".\n")
	}
	switch {
	case p.err != nil:
		b.WriteString("The last look failed: " + p.err.Error())
	case want:
		b.WriteString(m.FailureMessage(p.actual))
	default:
		b.WriteString(m.NegatedFailureMessage(p.actual))
	}
	return b.String()
}

func describe(description []any) string {
	switch len(description) {
	case 0:
		return ""
	case 1:
		if f, ok := description[0].(func() string); ok {
			return f()
		}
		return fmt.Sprint(description[0])
	}
	format, ok := description[0].(string)
	if !ok {
		return fmt.Sprint(description...)
	}
	return fmt.Sprintf(format, description[1:]...)
}

// handOver turns an object given to an assertion into an *Observed, which
// remembers which object it is; anything else stays as it is.
func (c *Cluster) handOver(actual any) (any, error) {
	switch a := actual.(type) {
	case *Cluster, *Observed, nil:
		return actual, nil
	case runtime.Object:
		ref, err := refFor(a)
		if err != nil {
			return nil, err
		}
		u, _ := toUnstructured(a) // refFor converted it already
		return &Observed{Cluster: c, Ref: ref.String(), ref: ref, uid: string(u.GetUID()), given: a}, nil
	}
	return actual, nil
}

// resolve is what m is asked about this time: a function's value, an
// object read afresh — as an *Observed for this package's matchers, as
// the Go type it was given as for others.
func (c *Cluster) resolve(actual any, m types.GomegaMatcher) (any, error) {
	if o, ok := actual.(*Observed); ok {
		fresh, err := c.observe(o)
		if err != nil {
			return nil, err
		}
		if _, ours := m.(clusterMatcher); ours {
			return fresh, nil
		}
		return fresh.asGiven()
	}
	if v := reflect.ValueOf(actual); v.Kind() == reflect.Func {
		return call(v)
	}
	return actual, nil
}

// observe reads o's object again.
func (c *Cluster) observe(o *Observed) (*Observed, error) {
	u, err := c.get(o.ref)
	if err != nil {
		return nil, err
	}
	// An object of the same name made since is another object: the one
	// handed over is gone.
	if u != nil && o.uid != "" && string(u.GetUID()) != o.uid {
		u = nil
	}
	fresh := *o
	fresh.Object = u
	return &fresh, nil
}

// asGiven is the object in the Go type it was handed over as: a typed
// nil pointer once it is gone.
func (o *Observed) asGiven() (any, error) {
	t := reflect.TypeOf(o.given)
	if o.Object == nil {
		return reflect.Zero(t).Interface(), nil
	}
	into := reflect.New(t.Elem()).Interface().(runtime.Object)
	if err := fromUnstructured(o.Object, into); err != nil {
		return nil, err
	}
	return into, nil
}

// call calls a function actual that takes no arguments and returns a value,
// or a value and an error.
func call(f reflect.Value) (any, error) {
	t := f.Type()
	if t.NumIn() != 0 || t.NumOut() == 0 || t.NumOut() > 2 {
		return nil, fmt.Errorf("a function to poll takes no arguments and returns a value, or a value and an error; got %s", t)
	}
	out := f.Call(nil)
	if len(out) == 2 {
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, err
		}
	}
	return out[0].Interface(), nil
}
