package scenarios

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/trace"
)

// This file is what the Go API for driver repositories (package
// csisimtest) uses of the scenario runner, so that a Ginkgo suite and a
// scenario file judge a cluster the same way: objects named as a scenario
// names them, the csiCalls check, and the invariants after a run.

// Objects is the cluster as scenario steps see it: kinds are resolved as
// a scenario writes them (pvc, PersistentVolumeClaim,
// VolumeAttachment.v1.storage.k8s.io), and an empty namespace means
// "default" for namespaced kinds.
type Objects struct{ store *kubeObjects }

// NewObjects connects to the API server in cfg; clk paces rediscovery of
// kinds the server did not know yet.
func NewObjects(cfg *rest.Config, clk clock.PassiveClock) (*Objects, error) {
	k, err := newKubeObjects(cfg, clk)
	if err != nil {
		return nil, err
	}
	return &Objects{store: k}, nil
}

// Apply creates obj, or replaces it if it exists, as an apply step does;
// it says which ("created", "updated").
func (o *Objects) Apply(ctx context.Context, obj *unstructured.Unstructured, namespace string) (string, error) {
	return o.store.apply(ctx, obj, namespace)
}

// Get returns the object's content, or nil if it does not exist.
func (o *Objects) Get(ctx context.Context, ref ObjectRef, namespace string) (map[string]any, error) {
	return o.store.get(ctx, ref, namespace)
}

// Delete deletes the object; found is false if it did not exist. force
// deletes it with a grace period of 0, as a delete step's force: true
// (kubectl delete --force --grace-period=0) does.
func (o *Objects) Delete(ctx context.Context, ref ObjectRef, namespace string, force bool) (found bool, err error) {
	return o.store.delete(ctx, ref, namespace, deleteOpts{Force: force})
}

// CSICallVerdict is what a csiCalls check found.
type CSICallVerdict struct {
	// Held says whether the calls are as the check expects.
	Held bool
	// Expected says what the check expects, e.g. "CSI calls on volume v
	// to be exactly: CreateVolume, NodeStageVolume".
	Expected string
	// Seen lists the calls compared, on one line.
	Seen string
	// Explain lays out expected and seen calls where they differ; empty
	// when the check held.
	Explain string
}

// Evaluate compares calls (trace.CSI entries, oldest first) with the check,
// as a scenario's csiCalls wait and assert do.
func (c *CSICallCheck) Evaluate(calls []trace.Entry) CSICallVerdict {
	v := c.evaluate(calls)
	return CSICallVerdict{Held: v.held, Expected: c.expectation(), Seen: v.seen, Explain: v.explain}
}

// CheckInvariants checks every invariant over the history and the end
// state of b, which must keep a history (HistorySource), as the runner
// does after a scenario's steps. expectViolated are invariants expected to
// be violated (a scenario's expect: violations). The entries returned are
// the history judged, which the violations refer to by Seq.
func CheckInvariants(ctx context.Context, b Backend, expectViolated []string) (*InvariantResult, []trace.Entry, error) {
	if _, ok := b.(HistorySource); !ok {
		return nil, nil, fmt.Errorf("checking invariants needs a backend that keeps the run's history (such as the simulator); %T does not", b)
	}
	r := &Runner{Backend: b}
	s := &Scenario{Expect: Expect{Violations: expectViolated}}
	res := &Result{}
	err := r.checkInvariants(ctx, s, res)
	var ierr *InvariantError
	switch {
	case errors.As(err, &ierr):
		return res.Invariants, ierr.Entries, nil
	case err != nil:
		return nil, nil, err
	}
	// Every invariant held (or broke as expected): the history they held
	// over is the backend's up to now.
	entries := b.(HistorySource).History()
	return res.Invariants, entries, nil
}
