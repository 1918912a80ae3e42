// Package diff runs one scenario on the simulator and on a real control
// plane (package realcluster) and reports, step by step, where the two
// clusters differ: in the objects of the volume lifecycle, the events about
// them and the CSI calls made for each volume.
//
// Each cluster runs the scenario as `csisim run` would, with nothing
// between its steps that the scenario does not ask for: the judge only
// marks where each step ended, and reads each cluster's state at those
// marks without delaying it (run.go). Afterwards the two runs are aligned
// step by step and compared. What differs only in when it happened — a
// retry count, a backoff that fell on the other side of a step's end, the
// order of independent nodes' calls — is told apart from what differs in
// what happened, with the help of each run's whole history (timing.go).
//
// A snapshot is normalised before it is compared: names the two clusters
// generate differently (a PV named after its claim's UID, a
// VolumeAttachment named after a hash, a volume handle) become
// placeholders named after the claim they belong to, and values that embed
// UIDs, times or the machine's host name lose them.
package diff

import (
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/trace"
)

// Object is one object of a snapshot, normalised.
type Object struct {
	Kind string `json:"kind"`
	// Name is namespace/name, or a placeholder for a generated name.
	Name string `json:"name"`
	// Exists is false for an object that is gone but has events about it.
	Exists      bool              `json:"exists"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
	// Owners are the owner references as Kind/name.
	Owners []string `json:"owners,omitempty"`
	Phase  string   `json:"phase,omitempty"`
	// Conditions are, by type, "Status (Reason): message".
	Conditions map[string]string `json:"conditions,omitempty"`
	// Fields are the lifecycle's fields of the kind: claimRef,
	// volumeName, nodeName, attached, volumesAttached, ...
	Fields map[string]string `json:"fields,omitempty"`
	// Managers are who wrote the object, from its managedFields: each
	// entry as "manager Operation" or "manager Operation/subresource",
	// sorted, without repeats.
	Managers []string `json:"managers,omitempty"`
	// Events are the events about the object, by reason.
	Events map[string]EventSummary `json:"events,omitempty"`
}

// EventSummary is what the events of one reason about an object say.
type EventSummary struct {
	// Messages are the events' messages, normalised, sorted, distinct.
	Messages []string `json:"messages"`
	// Sources are who reported them (eventSource), sorted, distinct.
	Sources []string `json:"sources"`
	// Count is how many times they were reported: the sum of the events'
	// counts.
	Count int32 `json:"count"`
}

// Key is how snapshots index an object: "Kind name".
func (o Object) Key() string { return o.Kind + " " + o.Name }

// Snapshot is a normalised picture of a cluster at the end of one step.
type Snapshot struct {
	Step     int    `json:"step"`
	StepName string `json:"stepName"`
	// Outcome is the step's: passed or failed; Detail says why a failed
	// step failed.
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
	// At is when the step ended, after the start point: real time on the
	// real control plane, virtual time in the simulator.
	At      time.Duration     `json:"atNanos"`
	Objects map[string]Object `json:"objects"`
	// CSICalls are the calls made so far, by volume placeholder, in order,
	// without the informational calls.
	CSICalls map[string][]Call `json:"csiCalls,omitempty"`
}

// Equal reports whether two snapshots show the same cluster state.
func (s Snapshot) Equal(o Snapshot) bool {
	return maps.Equal(s.aspects(), o.aspects())
}

// kindOrder orders a report's objects the way the lifecycle meets them.
var kindOrder = []string{"CSIDriver", "StorageClass", "PersistentVolumeClaim", "PersistentVolume", "Pod",
	"VolumeAttachment", "Node", "CSINode", "VolumeSnapshotClass", "VolumeSnapshot", "VolumeSnapshotContent",
	"VolumeGroupSnapshotClass", "VolumeGroupSnapshot", "VolumeGroupSnapshotContent",
	"StatefulSet", "ControllerRevision", "Deployment", "ReplicaSet"}

// systemNamespaces hold the control plane's own objects, not the
// scenario's; a snapshot leaves them out.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// droppedAnnotations say how an object was written, not what it is.
var droppedAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration"}

// Normaliser turns what a cluster lists into snapshots that can be
// compared with another cluster's. It remembers every generated name it
// has seen, so that a PV's placeholder still names its CSI calls after the
// PV is gone; use one Normaliser per run.
type Normaliser struct {
	names  map[string]string // generated name or UID -> placeholder
	sorted []string          // the keys of names, longest first; nil when names changed
	// hosts are the names of the machine the cluster runs on, which
	// event sources embed (hostRE).
	hosts []*regexp.Regexp
}

// NewNormaliser returns a Normaliser that knows no names yet. hosts are
// the machine's host names, as a real component's event source embeds
// them (csi-provisioner: <driver>_<host>_<uuid>).
func NewNormaliser(hosts ...string) *Normaliser {
	n := &Normaliser{names: map[string]string{}}
	for _, h := range hosts {
		if h != "" {
			n.hosts = append(n.hosts, regexp.MustCompile(`(^|[_/-])`+regexp.QuoteMeta(h)+`($|[_/-])`))
		}
	}
	return n
}

var (
	uuidRE     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	pvNameRE   = regexp.MustCompile(`^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	vaNameRE   = regexp.MustCompile(`^csi-[0-9a-f]{64}$`)
	timeRE     = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	identityRE = regexp.MustCompile(`\b\d{10,}-\d+-`) // csiProvisionerIdentity: <unix ms>-<random>-<driver>
	longNumRE  = regexp.MustCompile(`\b\d{10,}\b`)
	// runRootRE is a run's temporary root (runroot.New: csisim-run-* for
	// the simulator, csisim-real-* for the real control plane), as paths
	// in messages name it.
	runRootRE = regexp.MustCompile(`[^\s"']*/csisim-(run|real)-\d+`)
)

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// name returns the placeholder of a generated name, or the name.
func (n *Normaliser) name(raw string) string {
	if p, ok := n.names[raw]; ok {
		return p
	}
	return raw
}

// value normalises a value that may embed generated names, UIDs, times.
func (n *Normaliser) value(s string) string {
	if p, ok := n.names[s]; ok {
		return p
	}
	if n.sorted == nil && len(n.names) > 0 {
		n.sorted = slices.Collect(maps.Keys(n.names))
		// Longest first, so that a name never replaces part of a longer one.
		sort.Slice(n.sorted, func(i, j int) bool {
			a, b := n.sorted[i], n.sorted[j]
			return len(a) > len(b) || len(a) == len(b) && a < b
		})
	}
	for _, raw := range n.sorted {
		if strings.Contains(s, raw) {
			s = strings.ReplaceAll(s, raw, n.names[raw])
		}
	}
	s = uuidRE.ReplaceAllString(s, "<uid>")
	s = runRootRE.ReplaceAllString(s, "<run root>")
	s = timeRE.ReplaceAllString(s, "<time>")
	s = identityRE.ReplaceAllString(s, "<time>-<n>-")
	return longNumRE.ReplaceAllString(s, "<n>")
}

func (n *Normaliser) values(m map[string]string, drop ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !slices.Contains(drop, k) {
			out[k] = n.value(v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// object normalises what every kind has: name, labels, annotations,
// finalizers, owners, managers.
func (n *Normaliser) object(kind string, m metav1.ObjectMeta) Object {
	o := Object{Kind: kind, Name: n.name(qualified(m.Namespace, m.Name)), Exists: true,
		Labels: n.values(m.Labels), Annotations: n.values(m.Annotations, droppedAnnotations...),
		Fields: map[string]string{}, Managers: managers(m.ManagedFields)}
	if m.Namespace == "" {
		o.Name = n.name(m.Name)
	}
	for _, f := range m.Finalizers {
		o.Finalizers = append(o.Finalizers, n.value(f))
	}
	for _, r := range m.OwnerReferences {
		o.Owners = append(o.Owners, r.Kind+"/"+n.name(r.Name))
	}
	if m.DeletionTimestamp != nil {
		o.Fields["deleting"] = "true"
	}
	return o
}

// managers lists the writers of an object's fields, by manager name,
// operation and subresource: who wrote it, not when nor which fields.
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		s := e.Manager + " " + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Snapshot learns the generated names in objs and calls and returns them
// normalised. The step fields are left for the caller.
func (n *Normaliser) Snapshot(objs Objects, calls []trace.Entry) Snapshot {
	n.Learn(objs, calls)
	return n.normalise(objs, calls)
}

// normalise is Snapshot with the names learnt already.
func (n *Normaliser) normalise(objs Objects, calls []trace.Entry) Snapshot {
	s := Snapshot{Objects: map[string]Object{}}
	add := func(o Object) {
		if len(o.Fields) == 0 {
			o.Fields = nil
		}
		s.Objects[o.Key()] = o
	}
	n.claimObjects(add, objs)
	n.podObjects(add, objs.Pods)
	n.attachmentObjects(add, objs)
	n.driverObjects(add, objs)
	n.snapshotObjects(add, objs)
	n.groupSnapshotObjects(add, objs)
	n.workloadObjects(add, objs.Workloads)
	n.events(s.Objects, objs.Events)
	s.CSICalls = n.csiCalls(calls)
	return s
}

// quantity is the storage in a resource list, or "" for none.
func quantity(l corev1.ResourceList) string {
	if q, ok := l[corev1.ResourceStorage]; ok {
		return q.String()
	}
	return ""
}

func setField(fields map[string]string, name, value string) {
	if value != "" {
		fields[name] = value
	}
}

// setCondition records a condition: "Status (Reason): message".
func (o *Object) setCondition(typ, status, reason, message string) {
	s := status
	if reason != "" {
		s += " (" + reason + ")"
	}
	if message != "" {
		s += ": " + message
	}
	if o.Conditions == nil {
		o.Conditions = map[string]string{}
	}
	o.Conditions[typ] = s
}

// containerStates says each container's state as "name=running",
// "name=waiting(Reason)" or "name=terminated(Reason)", joined by ", ":
// by name when sorted (a pod's containers), else in the status's order
// (init containers run in order).
func containerStates(statuses []corev1.ContainerStatus, sorted bool) string {
	states := make([]string, 0, len(statuses))
	for _, cs := range statuses {
		state, reason := "unknown", ""
		switch s := cs.State; {
		case s.Running != nil:
			state = "running"
		case s.Waiting != nil:
			state, reason = "waiting", s.Waiting.Reason
		case s.Terminated != nil:
			state, reason = "terminated", s.Terminated.Reason
		}
		if reason != "" {
			state += "(" + reason + ")"
		}
		states = append(states, cs.Name+"="+state)
	}
	if sorted {
		sort.Strings(states)
	}
	return strings.Join(states, ", ")
}
