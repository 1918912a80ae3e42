package explain

import (
	"fmt"
	"slices"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/trace"
)

// SnapshotFromHistory is the cluster's state at the end of a run's
// history: every object as its last API write stored it, without those
// removed (which Gone lists with their times). Now is the time of the
// last entry. (SnapshotAt is the state at a time within it.)
//
// Entries carry offsets from the recorder's start, objects carry the
// cluster clock's times; the start is found from the objects' creation
// timestamps (whole seconds), so times are exact to the second.
func SnapshotFromHistory(entries []trace.Entry) *Snapshot {
	if len(entries) == 0 {
		return &Snapshot{}
	}
	return SnapshotAt(entries, len(entries), entries[len(entries)-1].At)
}

// SnapshotAt is the cluster's state at offset at of a run's history,
// after its first n entries (those up to at): every object as the last of
// them stored it, and in flight the CSI calls sent before and answered
// only in the entries after.
func SnapshotAt(history []trace.Entry, n int, at time.Duration) *Snapshot {
	n = min(max(n, 0), len(history))
	// The start is estimated from every create, also the later ones.
	start := historyStart(history)
	s := snapshotOf(history[:n], start)
	s.Now = start.Add(at)
	for _, e := range trace.InFlightAt(history, n, at) {
		c := e.Call
		s.InFlight = append(s.InFlight, Call{Actor: e.Actor, Method: e.Verb, Volume: c.Volume, Node: c.Node, Sent: start.Add(c.Started)})
	}
	return s
}

// EndOfSteps is where a run's steps end in its history: the number of
// entries up to the last step's, and its time. What comes after is the
// run's clean-up and the cluster's shutdown, whose errors (a call cut
// off: "grpc: the client connection is closing") are no cause of how the
// run went.
func EndOfSteps(history []trace.Entry) (n int, at time.Duration) {
	_, n = trace.StepsSpan(history)
	if n == 0 {
		return 0, 0
	}
	return n, history[n-1].At
}

// PointAt is where offset at is in a run's history: the number of entries
// at or before it. It refuses a time after the run's steps ended, when
// the cluster was being torn down, or before the run started.
func PointAt(history []trace.Entry, at time.Duration) (int, error) {
	end, endAt := EndOfSteps(history)
	switch {
	case at < 0:
		return 0, fmt.Errorf("%s is before the run started", at)
	case at > endAt:
		return 0, fmt.Errorf("the run's steps ended at +%s (after that the cluster was torn down): want a time up to it", endAt)
	}
	n := 0
	for n < end && history[n].At <= at {
		n++
	}
	return n, nil
}

// snapshotOf is the objects as the entries' API writes left them; start
// is the cluster time of offset 0.
func snapshotOf(entries []trace.Entry, start time.Time) *Snapshot {
	type slot struct {
		obj runtime.Object
		seq int
	}
	live := map[string]slot{} // by kind/namespace/name
	var gone []GoneObject
	for _, e := range entries {
		if e.Kind != trace.API || e.Write == nil || e.Write.Object == nil {
			continue
		}
		w := e.Write
		k := w.Kind + "/" + w.Namespace + "/" + w.Name
		if w.Removed {
			delete(live, k)
			g := GoneObject{Ref: Ref{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}, At: start.Add(e.At)}
			if p, ok := w.Object.(*corev1.Pod); ok {
				g.Pod = p
			}
			gone = append(gone, g)
			continue
		}
		live[k] = slot{obj: w.Object, seq: e.Seq}
	}
	s := &Snapshot{Gone: gone}
	// In the order they were last written, so that the snapshot, and what
	// Explain says from it, is the same for the same history.
	ordered := make([]slot, 0, len(live))
	for _, sl := range live {
		ordered = append(ordered, sl)
	}
	slices.SortFunc(ordered, func(a, b slot) int { return a.seq - b.seq })
	for _, sl := range ordered {
		switch o := sl.obj.(type) {
		case *corev1.Pod:
			s.Pods = append(s.Pods, *o)
		case *corev1.PersistentVolumeClaim:
			s.Claims = append(s.Claims, *o)
		case *corev1.PersistentVolume:
			s.Volumes = append(s.Volumes, *o)
		case *corev1.Node:
			s.Nodes = append(s.Nodes, *o)
		case *corev1.Event:
			s.Events = append(s.Events, *o)
		case *eventsv1.Event:
			s.EventsV1 = append(s.EventsV1, *o)
		case *storagev1.StorageClass:
			s.Classes = append(s.Classes, *o)
		case *storagev1.CSIDriver:
			s.Drivers = append(s.Drivers, *o)
		case *storagev1.CSINode:
			s.CSINodes = append(s.CSINodes, *o)
		case *storagev1.VolumeAttachment:
			s.Attachments = append(s.Attachments, *o)
		case *storagev1.CSIStorageCapacity:
			s.Capacities = append(s.Capacities, *o)
		case *snapv1.VolumeSnapshot:
			s.VolumeSnapshots = append(s.VolumeSnapshots, *o)
		case *snapv1.VolumeSnapshotContent:
			s.SnapshotContents = append(s.SnapshotContents, *o)
		}
	}
	return s
}

// historyStart is the cluster time of offset 0: a create stamps the
// object with the clock's time, truncated to the second, at its entry's
// offset, so creationTimestamp - At is at most a second early; the
// latest such estimate is the closest.
func historyStart(entries []trace.Entry) time.Time {
	var start time.Time
	for _, e := range entries {
		if e.Kind != trace.API || e.Write == nil || e.Write.Verb != "create" || e.Write.Object == nil {
			continue
		}
		m, err := meta.Accessor(e.Write.Object)
		if err != nil {
			continue
		}
		created := m.GetCreationTimestamp()
		if created.IsZero() {
			continue
		}
		if t := created.Add(-e.At); t.After(start) {
			start = t
		}
	}
	return start
}
