// Package invariant checks what must hold in every run, whatever the
// scenario: properties of the run's history (the timeline's API writes, CSI
// calls and workload checks, with their structured data) and of the cluster
// it ended in. The checks are pure functions: no I/O, no clock, so a test
// feeds them a synthetic history.
package invariant

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csisim/csisim/trace"
)

// History is what the checker reads.
type History struct {
	// Entries is the run's timeline, in order.
	Entries []trace.Entry
	// End is the cluster when the run ended.
	End EndState
	// LateWrites says that API writes may stand in the timeline after CSI
	// calls made after them (a real control plane's timeline learns of
	// writes by watching), so that the order of a write and a call is not
	// to be trusted.
	LateWrites bool
	// Driver is the CSI driver whose calls Entries holds, in a run of
	// several (drivers.go): the pod volumes of others are not its
	// business. Empty: a run of one driver.
	Driver string
}

// EndState is the cluster as the run left it.
type EndState struct {
	// Observed is false when the backend could not read the end state;
	// the checks that need it are then skipped.
	Observed               bool
	PersistentVolumes      []corev1.PersistentVolume
	PersistentVolumeClaims []corev1.PersistentVolumeClaim
	Pods                   []corev1.Pod
	Nodes                  []corev1.Node
	VolumeAttachments      []storagev1.VolumeAttachment
	CSIDrivers             []storagev1.CSIDriver
	// Mounts are the mount points still mounted under the run's kubelet
	// directories; MountsKnown is false when the backend cannot tell.
	Mounts      []string
	MountsKnown bool
	// VolumeSnapshotContents are the snapshot contents left;
	// SnapshotsKnown is false when the cluster does not serve them (no
	// snapshot CRDs), and snapshots are then not judged.
	VolumeSnapshotContents []snapv1.VolumeSnapshotContent
	SnapshotsKnown         bool
}

// Violation is one breach of an invariant.
type Violation struct {
	// Invariant is the invariant's name.
	Invariant string
	// Message says what happened, naming the entries by their Seq (#n).
	Message string
	// Entries are the Seqs of the timeline entries that break it.
	Entries []int
	// KnownUpstream names the known Kubernetes bug that left things so
	// ("kubernetes#121937") when the violation is Kubernetes' doing, not
	// the driver's: the message says how. "" for any other violation.
	// Such a violation is a verdict of its own — reported on every run
	// that has it, never counted as a failure (scenarios.InvariantResult
	// keeps it apart) — so that a sweep can be green while the bug is
	// there and still show it.
	KnownUpstream string
}

// KnownLine is how a known-upstream violation is printed, on every run
// that has it: "KNOWN  kubernetes#121937: INVARIANT csi-call-order
// violated: ...".
func (v Violation) KnownLine() string {
	return fmt.Sprintf("KNOWN  %s: INVARIANT %s violated: %s", v.KnownUpstream, v.Invariant, v.Message)
}

// Invariant is one property every run must have.
type Invariant struct {
	// Name is stable, kebab-case: what `INVARIANT <name> violated:` and a
	// scenario's `expect: {violations: [name]}` say.
	Name string
	// Doc says in a sentence what must hold.
	Doc   string
	Check func(h *History) []Violation
}

// All are the invariants, in the order they are checked.
func All() []Invariant {
	return []Invariant{
		singleNode, singlePod, attachMatches, callOrder, nothingLeaked, noLeakedVolume, idempotentRetry, podVolumesSetUp, dataDurability, restoredData,
	}
}

// Names are the invariants' names, in order.
func Names() []string {
	var out []string
	for _, inv := range All() {
		out = append(out, inv.Name)
	}
	return out
}

// Known reports whether name is an invariant's name.
func Known(name string) bool { return slices.Contains(Names(), name) }

// Check runs every invariant over h and returns the violations found, by
// invariant and then in timeline order.
func Check(h *History) []Violation {
	var out []Violation
	for _, inv := range All() {
		out = append(out, run(inv, h)...)
	}
	return out
}

// run checks one invariant, over each driver's history in a run of
// several (drivers.go): its violations named, each with its entries in
// order, in the order of their first entries.
func run(inv Invariant, h *History) []Violation {
	var vs []Violation
	for _, part := range byDriver(h) {
		vs = append(vs, inv.Check(part)...)
	}
	for i := range vs {
		vs[i].Invariant = inv.Name
		slices.Sort(vs[i].Entries)
		vs[i].Entries = slices.Compact(vs[i].Entries)
	}
	slices.SortStableFunc(vs, func(a, b Violation) int { return cmp.Compare(first(a.Entries), first(b.Entries)) })
	// Each driver's history holds the entries of no driver (API writes,
	// data checks): a violation of those is found once per driver.
	return slices.CompactFunc(vs, func(a, b Violation) bool { return a.Message == b.Message && slices.Equal(a.Entries, b.Entries) })
}

// seqList names entries: "#3, #7".
func seqList(seqs []int) string {
	parts := make([]string, len(seqs))
	for i, s := range seqs {
		parts[i] = fmt.Sprintf("#%d", s)
	}
	return strings.Join(parts, ", ")
}

func first(seqs []int) int {
	if len(seqs) == 0 {
		return 0
	}
	return seqs[0]
}
