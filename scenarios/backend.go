package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/timing"
	"github.com/csisim/csisim/trace"
)

// Backend is where a scenario runs: the simulator, a real control plane, a
// kind cluster. Everything a step does to objects goes through the API
// server that RESTConfig points at.
//
// Features that only some backends have are separate interfaces (such as
// CSICallSource, or fault.Injector for fault steps), checked before a scenario starts so that a scenario that
// needs one fails at once rather than halfway through.
type Backend interface {
	RESTConfig() *rest.Config
}

// DriverReporter is implemented by backends that asked their driver what
// it says of itself when they started (the simulator, the real control
// plane): its name, capabilities and a node's NodeGetInfo. The runner
// decides from these answers which capabilities the driver has
// (profile.Complete), rather than from what a profile declares.
type DriverReporter interface {
	DriverInfo() driverinfo.Info
}

// Deployer is implemented by backends that can be started with the
// driver's own deployment manifests (the simulator, cluster.Config.Deploy):
// DeployedFrom is the file or directory they were started with, "" for
// none. A scenario with cluster.deploy runs only on a backend started
// with the same manifests; the runner refuses it elsewhere, before any
// step.
type Deployer interface {
	DeployedFrom() string
}

// HealthMonitored is implemented by backends that can run the
// external-health-monitor sidecar; RunsHealthMonitor says whether this one
// was started with it (a scenario's cluster.healthMonitor needs it).
type HealthMonitored interface {
	RunsHealthMonitor() bool
}

// Timed is implemented by backends whose timing of node loss can be
// chosen at start (package timing); Timing says which this one was
// started with. A scenario runs only on a backend with its
// cluster.timing: one that is not Timed has v1.37's.
type Timed interface {
	Timing() timing.Timing
}

// CSICallSource is implemented by backends that can see CSI calls (the
// simulator). csiCalls checks need it.
type CSICallSource interface {
	// CSICalls returns the CSI calls made so far, oldest first; the list
	// only grows. Entries are trace.CSI entries: Verb is the method name,
	// Object the volume ID.
	CSICalls() []trace.Entry
}

// ManifestAdapter is implemented by backends that must change a manifest
// to carry it out as written: real nodes cannot pull the images a pod
// names, so they run csisim's workload image in its containers instead.
// The runner calls AdaptManifest on a copy of every object it applies.
type ManifestAdapter interface {
	AdaptManifest(obj *unstructured.Unstructured) error
}

// FaultUndoer is implemented by backends on a shared cluster whose faults
// outlast a run (a node lost on kind stays down, its out-of-service taint
// stays on). With Runner.Restore, the runner has it put the cluster back at
// the end of every run, before the run's namespace goes and what it
// borrowed is given back.
type FaultUndoer interface {
	UndoFaults(ctx context.Context) error
}

// Simulated is implemented by backends whose time is virtual (the
// simulator): a wait runs the simulation forward until its condition holds
// or its timeout has passed in virtual time, and a sleep runs it for the
// sleep's duration, so a six-minute wait costs no wall time. The runner's
// Clock should then be the backend's virtual clock.
type Simulated interface {
	// RunUntil returns nil once cond holds, context.DeadlineExceeded when
	// timeout has passed first. cond is called only while the cluster is
	// quiet, on the caller's goroutine.
	RunUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error
	// RunFor runs the simulation for d.
	RunFor(ctx context.Context, d time.Duration) error
}

// Relister is implemented by simulated backends whose components'
// informers an API fault can leave blind: an outage or a dropped watch
// ends their watches, and each reflector lists again only after its
// backoff (client-go's, up to a minute after the server is back).
// Relisting names those that have not listed yet.
type Relister interface {
	Relisting() []string
}

// ManifestRefuser is implemented by backends that do not carry out every
// field the real cluster acts on (the simulator, package sim/unmodelled):
// the fields of obj they refuse, each with the message that says why
// (Detail). The runner asks before a scenario runs, for every object its
// apply steps hold, and refuses the scenario with each field's file and
// line, as a load error.
type ManifestRefuser interface {
	RefuseManifest(obj map[string]any) field.ErrorList
}

// refusedManifests is every field of the scenario's manifests that b
// refuses, as load errors at the field's line; nil when there is none.
func refusedManifests(all []Step, b Backend) error {
	r, ok := b.(ManifestRefuser)
	if !ok {
		return nil
	}
	var errs ParseErrors
	for _, st := range all {
		if st.Apply == nil {
			continue
		}
		for _, m := range st.Apply.Objects {
			for _, e := range r.RefuseManifest(m.Object) {
				errs = append(errs, &ParseError{File: m.File, Line: m.FieldLine(e.Field), Step: st.Index, Action: "apply",
					Msg: m.Describe() + ": " + e.Detail})
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// unsupported returns why backend b cannot run step, or nil when it can.
func unsupported(st *Step, b Backend) error {
	c := st.check()
	if st.Fault != nil {
		inj, ok := b.(fault.Injector)
		if !ok {
			return fmt.Errorf("%s needs a backend that can inject faults (such as the simulator); this one cannot", st.Fault.Kind)
		}
		// The fault as written: a ${var} in it is not known yet, so the
		// backend judges the kind and the parameters it can.
		if err := inj.CanInject(*st.Fault); err != nil {
			return err
		}
	}
	if c != nil && c.CSICalls != nil {
		if _, ok := b.(CSICallSource); !ok {
			return errors.New("csiCalls needs a backend that can see CSI calls (one implementing CSICallSource, such as the simulator); this one cannot")
		}
	}
	return nil
}
