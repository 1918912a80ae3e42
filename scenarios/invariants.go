package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/trace"
)

// HistorySource is implemented by backends that keep the run's history
// with the structured data the invariants read (the simulator, the real
// control plane): the runner then checks every invariant after the steps.
type HistorySource interface {
	// History is the timeline so far, oldest first.
	History() []trace.Entry
}

// MountLister is implemented by backends whose kubelets mount on this
// machine: the mount points under the kubelets' directories, for the
// nothing-leaked invariant.
type MountLister interface {
	KubeletMounts() ([]string, error)
}

// LateWriter is implemented by backends whose timeline learns of API
// writes after the fact (the real control plane's, by watching): the
// invariants then do not trust the order of a write and a CSI call.
type LateWriter interface {
	WritesRecordedLate() bool
}

// history is the backend's history for the invariants, with end.
func (r *Runner) history(src HistorySource, end invariant.EndState) *invariant.History {
	lw, ok := r.Backend.(LateWriter)
	return &invariant.History{Entries: src.History(), End: end, LateWrites: ok && lw.WritesRecordedLate()}
}

// InvariantResult is what the invariant checker found after the steps.
type InvariantResult struct {
	// Checked is how many invariants were checked.
	Checked int
	// Violations are all the violations found, expected or not.
	Violations []invariant.Violation
	// Unexpected are the violations of invariants the scenario does not
	// expect to be violated, but those a known upstream bug caused;
	// Missing the expected ones that held.
	Unexpected []invariant.Violation
	Missing    []string
	// KnownUpstream are the violations of invariants the scenario does not
	// expect that a known Kubernetes bug caused (their KnownUpstream names
	// it): not a failure, a verdict of its own, printed on every run that
	// has them ("KNOWN  kubernetes#121937: INVARIANT ... violated: ...").
	KnownUpstream []invariant.Violation
}

// InvariantError is a run whose steps passed but whose history breaks an
// invariant (or keeps one the scenario expected it to break).
type InvariantError struct {
	File   string
	Result *InvariantResult
	// Entries is the timeline, to quote the entries a violation names.
	Entries []trace.Entry
	// ExpectLine is the line of the scenario's expect:, 0 if it has none.
	ExpectLine int
}

func (e *InvariantError) Error() string {
	var b strings.Builder
	for _, v := range e.Result.Unexpected {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "INVARIANT %s violated: %s", v.Invariant, v.Message)
		writeEntries(&b, v.Entries, e.Entries)
	}
	for _, name := range e.Result.Missing {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "INVARIANT %s held, but %s:%d expects it to be violated (expect: violations)", name, e.File, e.ExpectLine)
	}
	// A failure for other reasons still shows what a known bug did.
	if known := KnownReport(e.Result.KnownUpstream, e.Entries); known != "" {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(known)
	}
	return b.String()
}

// KnownReport is the lines of violations a known upstream bug caused, each
// with the timeline entries it names (from entries): "KNOWN
// kubernetes#121937: INVARIANT csi-call-order violated: ...". "" for none.
func KnownReport(known []invariant.Violation, entries []trace.Entry) string {
	var b strings.Builder
	for _, v := range known {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(v.KnownLine())
		writeEntries(&b, v.Entries, entries)
	}
	return b.String()
}

// writeEntries quotes the timeline entries seqs names, one a line.
func writeEntries(b *strings.Builder, seqs []int, entries []trace.Entry) {
	for _, seq := range seqs {
		if seq >= 1 && seq <= len(entries) {
			fmt.Fprintf(b, "\n    #%-5d %s", seq, entries[seq-1].Canonical())
		}
	}
}

// checkInvariants checks the run's history and end state, if the backend
// keeps a history; a nil error means every invariant held (or was
// violated as the scenario expects).
func (r *Runner) checkInvariants(ctx context.Context, s *Scenario, res *Result) error {
	src, ok := r.Backend.(HistorySource)
	if !ok {
		return nil
	}
	end, err := readEndState(ctx, r.Backend.RESTConfig())
	if err != nil {
		return fmt.Errorf("run scenario %s: reading the end state for the invariants: %w", s.Name, err)
	}
	if ml, ok := r.Backend.(MountLister); ok {
		mounts, err := ml.KubeletMounts()
		if err != nil {
			return fmt.Errorf("run scenario %s: listing the kubelets' mounts for the invariants: %w", s.Name, err)
		}
		end.Mounts, end.MountsKnown = mounts, true
	}
	h := r.history(src, *end)
	res.Invariants = judge(s, h)
	if len(res.Invariants.Unexpected) == 0 && len(res.Invariants.Missing) == 0 {
		return nil
	}
	return &InvariantError{File: s.File, Result: res.Invariants, Entries: h.Entries, ExpectLine: s.Expect.Line}
}

// brokenSoFar are the invariants the history broke by the time a step
// failed, unless the scenario expects them broken: often they are the
// cause of the failure; and apart, those a known upstream bug broke. The
// end state is not judged: the run never reached its end.
func (r *Runner) brokenSoFar(s *Scenario) (broken, known []invariant.Violation) {
	src, ok := r.Backend.(HistorySource)
	if !ok {
		return nil, nil
	}
	ir := judge(s, r.history(src, invariant.EndState{}))
	return ir.Unexpected, ir.KnownUpstream
}

// judge checks every invariant over h and sorts the violations into those
// the scenario expects, those a known upstream bug caused, and the others.
// A scenario's expect: takes a known one as any other: it reproduces the
// bug on purpose.
func judge(s *Scenario, h *invariant.History) *InvariantResult {
	return sortViolations(s.Expect.Violations, invariant.Check(h))
}

// sortViolations is judge's sorting of the violations found, vs, by the
// invariants the scenario expects violated.
func sortViolations(expected []string, vs []invariant.Violation) *InvariantResult {
	ir := &InvariantResult{Checked: len(invariant.All()), Violations: vs}
	for _, v := range ir.Violations {
		switch {
		case slices.Contains(expected, v.Invariant):
		case v.KnownUpstream != "":
			ir.KnownUpstream = append(ir.KnownUpstream, v)
		default:
			ir.Unexpected = append(ir.Unexpected, v)
		}
	}
	for _, name := range expected {
		if !slices.ContainsFunc(ir.Violations, func(v invariant.Violation) bool { return v.Invariant == name }) {
			ir.Missing = append(ir.Missing, name)
		}
	}
	return ir
}

// readEndState lists the objects the invariants judge the end by.
func readEndState(ctx context.Context, cfg *rest.Config) (*invariant.EndState, error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	var all metav1.ListOptions
	end := &invariant.EndState{Observed: true}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	end.PersistentVolumes = pvs.Items
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	end.PersistentVolumeClaims = pvcs.Items
	pods, err := cs.CoreV1().Pods("").List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("listing Pods: %w", err)
	}
	end.Pods = pods.Items
	nodes, err := cs.CoreV1().Nodes().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	end.Nodes = nodes.Items
	vas, err := cs.StorageV1().VolumeAttachments().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	end.VolumeAttachments = vas.Items
	drivers, err := cs.StorageV1().CSIDrivers().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("listing CSIDrivers: %w", err)
	}
	end.CSIDrivers = drivers.Items
	snaps, err := snapclientset.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	contents, err := snaps.SnapshotV1().VolumeSnapshotContents().List(ctx, all)
	switch {
	case apierrors.IsNotFound(err):
		// No snapshot CRDs: nothing to judge snapshots by.
	case err != nil:
		return nil, fmt.Errorf("listing VolumeSnapshotContents: %w", err)
	default:
		end.VolumeSnapshotContents, end.SnapshotsKnown = contents.Items, true
	}
	return end, nil
}
