package scenarios

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
)

// profile is the driver under test: Runner.Profile, or csisim's own
// driver, with what the running driver said of itself if the backend
// asked it (DriverReporter): its answers, not the profile, decide the
// capabilities it has.
func (r *Runner) profile() *profile.Profile {
	p := r.Profile
	if p == nil {
		p = profiles.MustDefault()
	}
	if dr, ok := r.Backend.(DriverReporter); ok {
		if info := dr.DriverInfo(); info.Asked() {
			return p.Complete(info)
		}
	}
	return p
}

// profileFor is the driver under test for s: a scenario that starts
// csisim's driver under another name (cluster.driverName) sees that name
// as ${driver.name}.
func (r *Runner) profileFor(s *Scenario) *profile.Profile {
	p := r.profile()
	if s.Cluster.DriverName == "" || s.Cluster.DriverName == p.Name {
		return p
	}
	named := *p
	named.Name = s.Cluster.DriverName
	return &named
}

// skipped is the result of a scenario the driver under test cannot run:
// every step skipped, with the reason.
func (r *Runner) skipped(s *Scenario, why string) *Result {
	res := &Result{Scenario: s.Name, File: s.File, Vars: map[string]string{}, Skipped: why}
	for _, st := range s.allSteps() {
		res.Steps = append(res.Steps, StepResult{Step: st.Index, Name: st.Name, Action: st.Action(), Line: st.Line, Outcome: Skipped, Detail: why})
	}
	r.printf("scenario %s (%s): SKIPPED: %s\n", s.Name, s.File, why)
	return res
}

// allSteps are the steps, then the finally steps.
func (s *Scenario) allSteps() []Step {
	return append(append([]Step(nil), s.Steps...), s.Finally...)
}

// file is the file the step is written in.
func (st Step) file(s *Scenario) string {
	if st.File != "" {
		return st.File
	}
	return s.File
}

// runNamespace is the namespace a run's namespaced objects go into.
type runNamespace struct {
	name string
	// made says the runner made it, and so deletes it at the end.
	made bool
}

// namespaceCleanupTimeout bounds the wait for a run's namespace to go at
// the end: its claims' volumes are deleted first, which takes a while on
// a real cluster.
const namespaceCleanupTimeout = 3 * time.Minute

// openNamespace decides the run's namespace (see Runner.Namespace) and
// makes it when it is the run's own.
func (r *Runner) openNamespace(ctx context.Context, s *Scenario, objects objectStore) (runNamespace, error) {
	if r.Namespace != "" {
		return runNamespace{name: r.Namespace}, nil
	}
	if _, ok := r.Backend.(Simulated); ok {
		return runNamespace{name: defaultNamespace}, nil
	}
	name := generatedNamespace(s.Name)
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"csisim.io/scenario": labelValue(s.Name)}},
	}}
	if _, err := objects.apply(ctx, ns, ""); err != nil {
		return runNamespace{}, fmt.Errorf("make the run's namespace %s: %w", name, err)
	}
	r.printf("  namespace %s (deleted at the end)\n", name)
	return runNamespace{name: name, made: true}, nil
}

// close deletes the run's own namespace and waits until it is gone, so
// that nothing the scenario made outlives the run.
func (ns runNamespace) close(ctx context.Context, ex *executor) error {
	if !ns.made {
		return nil
	}
	ref := ObjectRef{Kind: "namespaces", Name: ns.name}
	if _, err := ex.objects.delete(ctx, ref, "", deleteOpts{Propagation: "Foreground"}); err != nil {
		return fmt.Errorf("delete the run's namespace %s: %w", ns.name, err)
	}
	w := &Wait{Check: Check{Object: ref, Gone: true}, Timeout: namespaceCleanupTimeout}
	if _, err := ex.wait(ctx, w); err != nil {
		return fmt.Errorf("the run's namespace %s is not gone: %w", ns.name, err)
	}
	return nil
}

// generatedNamespace is csisim-<scenario>-<5 random characters>, cut to
// the 63 characters of a namespace name.
func generatedNamespace(scenario string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // as Kubernetes' generateName
	suffix := make([]byte, 5)
	_, _ = rand.Read(suffix)
	for i, b := range suffix {
		suffix[i] = alphabet[int(b)%len(alphabet)]
	}
	base := "csisim-" + labelValue(strings.ToLower(scenario))
	base = strings.Trim(base[:min(len(base), 63-len(suffix)-1)], "-.")
	return base + "-" + string(suffix)
}

// labelValue keeps the characters of s a DNS label allows, others as '-'.
func labelValue(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b[:min(len(b), 63)]), "-")
}

// inNamespace gives the step's namespaced parts the run's namespace when
// they name none; "default" is what none means already.
func inNamespace(st Step, ns string) Step {
	if ns == "" || ns == defaultNamespace {
		return st
	}
	set := func(s *string) {
		if *s == "" {
			*s = ns
		}
	}
	switch {
	case st.Apply != nil:
		a := *st.Apply
		set(&a.Namespace)
		st.Apply = &a
	case st.Wait != nil:
		w := *st.Wait
		set(&w.Namespace)
		st.Wait = &w
	case st.Consistently != nil:
		c := *st.Consistently
		set(&c.Namespace)
		st.Consistently = &c
	case st.Assert != nil:
		a := *st.Assert
		set(&a.Namespace)
		st.Assert = &a
	case st.Delete != nil:
		d := *st.Delete
		set(&d.Namespace)
		st.Delete = &d
	case st.Patch != nil:
		pt := *st.Patch
		set(&pt.Namespace)
		st.Patch = &pt
	case st.Fault != nil && st.Fault.Claim != "":
		f := *st.Fault // the claim's namespace
		set(&f.Namespace)
		st.Fault = &f
	}
	return st
}
