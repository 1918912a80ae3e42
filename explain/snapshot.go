// Package explain answers "why is this stuck?" for the objects of the CSI
// volume lifecycle. Explain is a pure function over a Snapshot of cluster
// state (the objects, their events, and the time): it follows the chain
// from the object asked about — a pod, a claim, a volume, an attachment, a
// node, a snapshot — to the cause, and says what each link waits for, in
// the components' own words where they said it (events, conditions,
// attach errors) and in plain English where csisim reads the state.
//
// Snapshots come from a live cluster (FromCluster, through client-go) or
// from a run's history (SnapshotFromHistory, the API writes of a trace).
package explain

import (
	"slices"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Snapshot is the cluster state Explain reads. Any list may be empty;
// Explain says what it cannot see rather than guess.
type Snapshot struct {
	// Now is when the snapshot was taken, on the cluster's clock: deadlines
	// and ages are measured from it.
	Now time.Time

	Pods             []corev1.Pod
	Claims           []corev1.PersistentVolumeClaim
	Volumes          []corev1.PersistentVolume
	Nodes            []corev1.Node
	Classes          []storagev1.StorageClass
	Drivers          []storagev1.CSIDriver
	CSINodes         []storagev1.CSINode
	Attachments      []storagev1.VolumeAttachment
	Capacities       []storagev1.CSIStorageCapacity
	Events           []corev1.Event
	EventsV1         []eventsv1.Event
	VolumeSnapshots  []snapv1.VolumeSnapshot
	SnapshotContents []snapv1.VolumeSnapshotContent

	// Gone lists objects that were removed and when, where the source
	// knows it (a run's history does, a live cluster does not): the
	// attach/detach controller's force-detach timer starts when the last
	// pod using a volume on a node went.
	Gone []GoneObject

	// InFlight are the CSI calls sent and not answered at Now, where the
	// source knows them (a run's history does, the API does not).
	InFlight []Call
}

// Call is a CSI call sent and not yet answered.
type Call struct {
	Actor  string // who sent it: "kubelet:node-1", "external-attacher"
	Method string // "NodeStageVolume"
	Volume string // the volume handle, if the call names one
	Node   string // the node of a node service call; "" for the controller's
	Sent   time.Time
}

// GoneObject is an object removed from the API, as last stored.
type GoneObject struct {
	Ref Ref
	At  time.Time
	// Pod is the removed object if it was a pod.
	Pod *corev1.Pod
}

// event is a corev1 or events.k8s.io/v1 Event, as Explain reads it.
type event struct {
	Regarding   Ref
	UID         types.UID
	Type        string
	Reason      string
	Message     string
	Source      string // the component: "default-scheduler", "kubelet", ...
	First, Last time.Time
	Count       int32
}

// index is the snapshot by name.
type index struct {
	now         time.Time
	pods        map[string]*corev1.Pod // namespace/name
	claims      map[string]*corev1.PersistentVolumeClaim
	volumes     map[string]*corev1.PersistentVolume
	nodes       map[string]*corev1.Node
	classes     map[string]*storagev1.StorageClass
	drivers     map[string]*storagev1.CSIDriver
	csiNodes    map[string]*storagev1.CSINode
	attachments map[string]*storagev1.VolumeAttachment
	snapshots   map[string]*snapv1.VolumeSnapshot
	contents    map[string]*snapv1.VolumeSnapshotContent
	capacities  []storagev1.CSIStorageCapacity
	events      []event
	gone        []GoneObject
	inFlight    []Call
	podList     []*corev1.Pod
	vaList      []*storagev1.VolumeAttachment
}

func key(namespace, name string) string { return namespace + "/" + name }

func newIndex(s *Snapshot) *index {
	ix := &index{now: s.Now, pods: map[string]*corev1.Pod{}, claims: map[string]*corev1.PersistentVolumeClaim{},
		volumes: map[string]*corev1.PersistentVolume{}, nodes: map[string]*corev1.Node{}, classes: map[string]*storagev1.StorageClass{},
		drivers: map[string]*storagev1.CSIDriver{}, csiNodes: map[string]*storagev1.CSINode{}, attachments: map[string]*storagev1.VolumeAttachment{},
		snapshots: map[string]*snapv1.VolumeSnapshot{}, contents: map[string]*snapv1.VolumeSnapshotContent{},
		capacities: s.Capacities, gone: s.Gone, inFlight: s.InFlight}
	for i := range s.Pods {
		p := &s.Pods[i]
		ix.pods[key(p.Namespace, p.Name)] = p
		ix.podList = append(ix.podList, p)
	}
	for i := range s.Claims {
		ix.claims[key(s.Claims[i].Namespace, s.Claims[i].Name)] = &s.Claims[i]
	}
	for i := range s.Volumes {
		ix.volumes[s.Volumes[i].Name] = &s.Volumes[i]
	}
	for i := range s.Nodes {
		ix.nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for i := range s.Classes {
		ix.classes[s.Classes[i].Name] = &s.Classes[i]
	}
	for i := range s.Drivers {
		ix.drivers[s.Drivers[i].Name] = &s.Drivers[i]
	}
	for i := range s.CSINodes {
		ix.csiNodes[s.CSINodes[i].Name] = &s.CSINodes[i]
	}
	for i := range s.Attachments {
		va := &s.Attachments[i]
		ix.attachments[va.Name] = va
		ix.vaList = append(ix.vaList, va)
	}
	for i := range s.VolumeSnapshots {
		ix.snapshots[key(s.VolumeSnapshots[i].Namespace, s.VolumeSnapshots[i].Name)] = &s.VolumeSnapshots[i]
	}
	for i := range s.SnapshotContents {
		ix.contents[s.SnapshotContents[i].Name] = &s.SnapshotContents[i]
	}
	for _, e := range s.Events {
		ev := event{Regarding: Ref{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name},
			UID: e.InvolvedObject.UID, Type: e.Type, Reason: e.Reason, Message: e.Message, Source: e.Source.Component,
			First: e.FirstTimestamp.Time, Last: e.LastTimestamp.Time, Count: e.Count}
		if e.ReportingController != "" && ev.Source == "" {
			ev.Source = e.ReportingController
		}
		if ev.Last.IsZero() {
			ev.Last = e.EventTime.Time
		}
		if e.Series != nil {
			ev.Count, ev.Last = e.Series.Count, e.Series.LastObservedTime.Time
		}
		if ev.First.IsZero() {
			ev.First = ev.Last
		}
		ix.events = append(ix.events, ev)
	}
	for _, e := range s.EventsV1 {
		ev := event{Regarding: Ref{Kind: e.Regarding.Kind, Namespace: e.Regarding.Namespace, Name: e.Regarding.Name},
			UID: e.Regarding.UID, Type: e.Type, Reason: e.Reason, Message: e.Note, Source: e.ReportingController,
			First: e.EventTime.Time, Last: e.EventTime.Time, Count: 1}
		if e.Series != nil {
			ev.Count, ev.Last = e.Series.Count, e.Series.LastObservedTime.Time
		}
		if ev.First.IsZero() {
			ev.First, ev.Last = e.DeprecatedFirstTimestamp.Time, e.DeprecatedLastTimestamp.Time
		}
		ix.events = append(ix.events, ev)
	}
	return ix
}

// eventsOf are the events about the object (by kind, namespace, name, and
// UID where both know it, so that a pod's predecessor of the same name
// does not speak for it), the latest first.
func (ix *index) eventsOf(kind, namespace, name string, uid types.UID) []event {
	var out []event
	for _, e := range ix.events {
		if e.Regarding.Kind != kind || e.Regarding.Namespace != namespace || e.Regarding.Name != name {
			continue
		}
		if uid != "" && e.UID != "" && e.UID != uid {
			continue
		}
		out = append(out, e)
	}
	// Latest first; stable on ties so equal times keep the snapshot's order.
	slices.SortStableFunc(out, func(a, b event) int { return b.Last.Compare(a.Last) })
	return out
}

// latestEvent is the latest event about the object with one of the
// reasons, nil if none.
func (ix *index) latestEvent(kind, namespace, name string, uid types.UID, reasons ...string) *event {
	for _, e := range ix.eventsOf(kind, namespace, name, uid) {
		for _, r := range reasons {
			if e.Reason == r {
				return &e
			}
		}
	}
	return nil
}
