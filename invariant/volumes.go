package invariant

import (
	"fmt"
	"maps"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/trace"
)

// noLeakedVolume: at the end, every volume the driver made belongs to a
// PersistentVolume or was deleted. The volumes the driver made are those it
// answered CreateVolume for: the CSI calls that succeeded, and the answers
// a fault kept from the caller (FAULT "answer lost" entries, with the
// driver's answer as their call), for a lost answer is the classic way a
// volume leaks: the driver made it, the caller never heard, and nobody
// asks again (external-provisioner #131, #311).
var noLeakedVolume = Invariant{
	Name: "no-leaked-volume",
	Doc:  "at the end every volume (snapshot) the driver answered CreateVolume (CreateSnapshot) for, heard by its caller or lost on the way, belongs to a PersistentVolume (VolumeSnapshotContent) or was deleted",
	Check: func(h *History) []Violation {
		if !h.End.Observed {
			return nil
		}
		end := newEndIndex(&h.End)
		kept := func(vol string) bool { return end.pvByHandle[vol] != nil }
		found := leaked(driverVolumes(h.Entries), kept, "volume", "CreateVolume", "PersistentVolume")
		return append(found, leakedSnapshots(h)...)
	},
}

// leakedSnapshots: every snapshot the driver made and did not delete
// belongs to a VolumeSnapshotContent (by its status.snapshotHandle, or
// spec.source.snapshotHandle for a pre-provisioned one), or to one whose
// deletionPolicy was Retain: the storage keeps that snapshot by design
// when the content is deleted. A snapshot leaks as a volume does: the
// answer lost, the VolumeSnapshot deleted while CreateSnapshot was in
// flight (external-provisioner #1449 restores from one).
func leakedSnapshots(h *History) []Violation {
	if !h.End.SnapshotsKnown {
		return nil
	}
	kept := retainedSnapshots(h.Entries)
	for _, c := range h.End.VolumeSnapshotContents {
		if c.Status != nil && c.Status.SnapshotHandle != nil {
			kept[*c.Status.SnapshotHandle] = true
		}
		if c.Spec.Source.SnapshotHandle != nil {
			kept[*c.Spec.Source.SnapshotHandle] = true
		}
	}
	made := driverMade(h.Entries, "CreateSnapshot", "DeleteSnapshot", func(c *trace.CSICall) string { return c.Snapshot })
	return leaked(made, func(id string) bool { return kept[id] }, "snapshot", "CreateSnapshot", "VolumeSnapshotContent")
}

// leaked is a violation for each of made that nothing keeps, by ID: what
// the driver made with create, and no object of kind owner is left for.
func leaked(made map[string]madeVolume, kept func(id string) bool, what, create, owner string) []Violation {
	var found []Violation
	for _, id := range slices.Sorted(maps.Keys(made)) {
		if kept(id) {
			continue
		}
		m := made[id]
		how := create
		if m.lost {
			how += ", its answer lost"
		}
		found = append(found, Violation{Entries: []int{m.seq},
			Message: fmt.Sprintf("%s %s (%s #%d) was never deleted, and no %s is left for it", what, id, how, m.seq, owner)})
	}
	return found
}

// madeVolume is the entry that says the driver made a volume.
type madeVolume struct {
	seq  int
	lost bool // the caller never heard of it
}

// driverVolumes are the volumes the driver made and did not delete, by
// its answers: CreateVolume and DeleteVolume answered OK, whether the
// caller heard the answer (a CSI entry) or not (a FAULT entry carrying the
// driver's answer).
func driverVolumes(entries []trace.Entry) map[string]madeVolume {
	return driverMade(entries, "CreateVolume", "DeleteVolume", func(c *trace.CSICall) string { return c.Volume })
}

// driverMade are the IDs (id of a call) that create calls answered OK and
// delete calls did not remove since, heard by the caller or not.
func driverMade(entries []trace.Entry, create, remove string, id func(*trace.CSICall) string) map[string]madeVolume {
	made := map[string]madeVolume{}
	for _, e := range entries {
		c := e.Call
		if c == nil || c.Code != codes.OK || (e.Kind != trace.CSI && e.Kind != trace.Fault) {
			continue
		}
		switch e.Verb {
		case create:
			if v := id(c); v != "" {
				made[v] = madeVolume{seq: e.Seq, lost: e.Kind == trace.Fault}
			}
		case remove:
			delete(made, id(c))
		}
	}
	return made
}

// retainedSnapshots are the snapshot handles of VolumeSnapshotContents
// whose deletionPolicy was Retain when last written.
func retainedSnapshots(entries []trace.Entry) map[string]bool {
	out := map[string]bool{}
	for _, e := range entries {
		if e.Kind != trace.API || e.Write == nil {
			continue
		}
		c, ok := e.Write.Object.(*snapv1.VolumeSnapshotContent)
		if !ok {
			continue
		}
		handle := ""
		if c.Status != nil && c.Status.SnapshotHandle != nil {
			handle = *c.Status.SnapshotHandle
		} else if c.Spec.Source.SnapshotHandle != nil {
			handle = *c.Spec.Source.SnapshotHandle
		}
		if handle != "" {
			out[handle] = c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentRetain
		}
	}
	return out
}
