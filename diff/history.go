package diff

import (
	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csisim/csisim/trace"
)

// History is, for each aspect, every value it took at some moment of a
// run: after any API write, not only at the ends of steps.
type History map[aspect]map[string]bool

func (h History) add(a aspect, v string) {
	if h[a] == nil {
		h[a] = map[string]bool{}
	}
	h[a][v] = true
}

// has says whether the aspect took v; nil (no value) every aspect had
// before its object was made.
func (h History) has(a aspect, v *string) bool {
	return v == nil || h[a][*v]
}

// History replays the API writes of a run's timeline, each with the object
// as it was stored, and records the value of every aspect of the written
// object after each write (of its events, after each write of an event
// about it). Use it once the Normaliser has learnt the run's names from
// its snapshots: names it does not know stay as they are.
func (n *Normaliser) History(entries []trace.Entry) History {
	h := History{}
	store := map[string]runtime.Object{}                // by kind/namespace/name
	eventsAbout := map[string]map[string]corev1.Event{} // by the object's key, then the event's namespace/name
	for _, e := range entries {
		if e.Kind != trace.API || e.Write == nil || e.Write.Object == nil {
			continue
		}
		w := e.Write
		subject := w.Kind + "/" + w.Namespace + "/" + w.Name
		if ev, ok := asEvent(w.Object); ok {
			ref := ev.InvolvedObject
			subject = ref.Kind + "/" + ref.Namespace + "/" + ref.Name
			if eventsAbout[subject] == nil {
				eventsAbout[subject] = map[string]corev1.Event{}
			}
			if w.Removed {
				delete(eventsAbout[subject], w.Namespace+"/"+w.Name)
			} else {
				eventsAbout[subject][w.Namespace+"/"+w.Name] = ev
			}
		} else if w.Removed {
			delete(store, subject)
		} else {
			store[subject] = w.Object
		}
		var objs Objects
		if o, ok := store[subject]; ok {
			objs.add(o)
		}
		for _, ev := range eventsAbout[subject] {
			objs.Events = append(objs.Events, ev)
		}
		for a, v := range n.normalise(objs, nil).aspects() {
			h.add(a, v)
		}
	}
	return h
}

// addSnapshots adds what a run's snapshots show to its history: a value at
// the end of a step was taken, also where the timeline does not show the
// write (a real cluster's timeline leaves out a node's heartbeats).
func (h History) addSnapshots(snaps []Snapshot) {
	for _, s := range snaps {
		for a, v := range s.aspects() {
			h.add(a, v)
		}
	}
}

// asEvent is an event of either API group as a core one.
func asEvent(o runtime.Object) (corev1.Event, bool) {
	switch e := o.(type) {
	case *corev1.Event:
		return *e, true
	case *eventsv1.Event:
		ev := corev1.Event{ObjectMeta: e.ObjectMeta, InvolvedObject: e.Regarding, Reason: e.Reason, Message: e.Note,
			Source: e.DeprecatedSource, Count: e.DeprecatedCount, Type: e.Type, Action: e.Action,
			ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance}
		if e.Series != nil {
			ev.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
		}
		return ev, true
	}
	return corev1.Event{}, false
}

// add puts an object of a snapshot's kinds into objs; other kinds are
// left out.
func (objs *Objects) add(o runtime.Object) {
	switch o := o.(type) {
	case *corev1.PersistentVolumeClaim:
		objs.PVCs = append(objs.PVCs, *o)
	case *corev1.PersistentVolume:
		objs.PVs = append(objs.PVs, *o)
	case *corev1.Pod:
		objs.Pods = append(objs.Pods, *o)
	case *storagev1.VolumeAttachment:
		objs.VolumeAttachments = append(objs.VolumeAttachments, *o)
	case *corev1.Node:
		objs.Nodes = append(objs.Nodes, *o)
	case *storagev1.CSINode:
		objs.CSINodes = append(objs.CSINodes, *o)
	case *storagev1.StorageClass:
		objs.StorageClasses = append(objs.StorageClasses, *o)
	case *storagev1.CSIDriver:
		objs.CSIDrivers = append(objs.CSIDrivers, *o)
	case *snapv1.VolumeSnapshot:
		objs.VolumeSnapshots = append(objs.VolumeSnapshots, *o)
	case *snapv1.VolumeSnapshotContent:
		objs.VolumeSnapshotContents = append(objs.VolumeSnapshotContents, *o)
	case *snapv1.VolumeSnapshotClass:
		objs.VolumeSnapshotClasses = append(objs.VolumeSnapshotClasses, *o)
	case *groupv1.VolumeGroupSnapshot:
		objs.VolumeGroupSnapshots = append(objs.VolumeGroupSnapshots, *o)
	case *groupv1.VolumeGroupSnapshotContent:
		objs.VolumeGroupSnapshotContents = append(objs.VolumeGroupSnapshotContents, *o)
	case *groupv1.VolumeGroupSnapshotClass:
		objs.VolumeGroupSnapshotClasses = append(objs.VolumeGroupSnapshotClasses, *o)
	case *appsv1.StatefulSet:
		objs.StatefulSets = append(objs.StatefulSets, *o)
	case *appsv1.Deployment:
		objs.Deployments = append(objs.Deployments, *o)
	case *appsv1.ReplicaSet:
		objs.ReplicaSets = append(objs.ReplicaSets, *o)
	case *appsv1.ControllerRevision:
		objs.ControllerRevisions = append(objs.ControllerRevisions, *o)
	}
}
