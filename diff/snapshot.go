// Package diff runs one scenario on the simulator and on a real control
// plane (package realcluster) and reports, step by step, where the two
// clusters differ: in the objects of the volume lifecycle, the events about
// them and the CSI calls made for each volume.
//
// After each step both clusters are let settle and a snapshot is taken:
// the real cluster, which runs first, is watched until it stops changing;
// the simulator is run to the same time after the start point as the real
// snapshot was taken at, and on until it too stops changing (run.go). So
// the two show the same moment of the scenario, timers that fire in the
// real cluster while it settles (a scheduler's backoff, a sidecar's retry)
// fire in the simulation too, and what differs is behaviour, not how long
// each was watched. A snapshot is normalised before
// it is compared: names the two clusters generate differently (a PV named
// after its claim's UID, a VolumeAttachment named after a hash, a volume
// handle) become placeholders named after the claim they belong to, and
// values that embed UIDs or times lose them.
package diff

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/trace"
)

// Objects are the objects of the lifecycle's kinds at one moment, as
// listed from a cluster.
type Objects struct {
	PVCs              []corev1.PersistentVolumeClaim
	PVs               []corev1.PersistentVolume
	Pods              []corev1.Pod
	VolumeAttachments []storagev1.VolumeAttachment
	Nodes             []corev1.Node
	CSINodes          []storagev1.CSINode
	Events            []corev1.Event
	StorageClasses    []storagev1.StorageClass
	CSIDrivers        []storagev1.CSIDriver
	// The snapshot kinds, from the CRDs of external-snapshotter.
	VolumeSnapshots        []snapv1.VolumeSnapshot
	VolumeSnapshotContents []snapv1.VolumeSnapshotContent
	VolumeSnapshotClasses  []snapv1.VolumeSnapshotClass
	// The workload kinds (workloadkinds.go).
	Workloads
}

// Clients are what a snapshot lists objects with: the core kinds', and
// the snapshot CRDs'.
type Clients struct {
	Kube      kubernetes.Interface
	Snapshots snapclientset.Interface
}

// NewClients makes the clients of a cluster.
func NewClients(cfg *rest.Config) (Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	snaps, err := snapclientset.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: kube, Snapshots: snaps}, nil
}

// List lists the objects of every kind a snapshot shows.
func List(ctx context.Context, cl Clients) (Objects, error) {
	var o Objects
	cs := cl.Kube
	opts := metav1.ListOptions{}
	errf := func(kind string, err error) error { return fmt.Errorf("listing %s: %w", kind, err) }
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, opts)
	if err != nil {
		return o, errf("PersistentVolumeClaims", err)
	}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, opts)
	if err != nil {
		return o, errf("PersistentVolumes", err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, opts)
	if err != nil {
		return o, errf("Pods", err)
	}
	vas, err := cs.StorageV1().VolumeAttachments().List(ctx, opts)
	if err != nil {
		return o, errf("VolumeAttachments", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return o, errf("Nodes", err)
	}
	csiNodes, err := cs.StorageV1().CSINodes().List(ctx, opts)
	if err != nil {
		return o, errf("CSINodes", err)
	}
	events, err := cs.CoreV1().Events("").List(ctx, opts)
	if err != nil {
		return o, errf("Events", err)
	}
	classes, err := cs.StorageV1().StorageClasses().List(ctx, opts)
	if err != nil {
		return o, errf("StorageClasses", err)
	}
	drivers, err := cs.StorageV1().CSIDrivers().List(ctx, opts)
	if err != nil {
		return o, errf("CSIDrivers", err)
	}
	workloads, err := listWorkloads(ctx, cs)
	if err != nil {
		return o, err
	}
	o = Objects{PVCs: pvcs.Items, PVs: pvs.Items, Pods: pods.Items, VolumeAttachments: vas.Items, Nodes: nodes.Items,
		CSINodes: csiNodes.Items, Events: events.Items, StorageClasses: classes.Items, CSIDrivers: drivers.Items, Workloads: workloads}
	if cl.Snapshots == nil {
		return o, nil
	}
	snaps, err := cl.Snapshots.SnapshotV1().VolumeSnapshots("").List(ctx, opts)
	if err != nil {
		return o, errf("VolumeSnapshots", err)
	}
	contents, err := cl.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, opts)
	if err != nil {
		return o, errf("VolumeSnapshotContents", err)
	}
	snapClasses, err := cl.Snapshots.SnapshotV1().VolumeSnapshotClasses().List(ctx, opts)
	if err != nil {
		return o, errf("VolumeSnapshotClasses", err)
	}
	o.VolumeSnapshots, o.VolumeSnapshotContents, o.VolumeSnapshotClasses = snaps.Items, contents.Items, snapClasses.Items
	return o, nil
}

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
	// Conditions are "Type=Status (Reason)", by type.
	Conditions []string `json:"conditions,omitempty"`
	// Fields are the lifecycle's fields of the kind: claimRef,
	// volumeName, nodeName, attached, volumesAttached, ...
	Fields map[string]string `json:"fields,omitempty"`
	// Events are the reasons of the events about the object, sorted.
	Events []string `json:"events,omitempty"`
	// EventMessages are, by reason, the normalised messages of the events
	// about the object with that reason, sorted and joined by " | ".
	EventMessages map[string]string `json:"eventMessages,omitempty"`
}

// Key is how snapshots index an object: "Kind name".
func (o Object) Key() string { return o.Kind + " " + o.Name }

// Snapshot is a normalised picture of a cluster after one step.
type Snapshot struct {
	Step     int    `json:"step"`
	StepName string `json:"stepName"`
	// Outcome is the step's: passed or failed.
	Outcome string `json:"outcome"`
	// Settled is false when the cluster was still changing when the
	// snapshot was taken.
	Settled bool `json:"settled"`
	// At is when the snapshot was taken, after the start point: real
	// time on the real control plane, virtual time in the simulator.
	At      time.Duration     `json:"atNanos"`
	Objects map[string]Object `json:"objects"`
	// CSICalls are the calls made so far, by volume placeholder: method
	// names in order, without the informational calls.
	CSICalls map[string][]string `json:"csiCalls,omitempty"`
	// AwaitsStatusSync: a kubelet's next node status sync will change
	// something (awaitsStatusSync); settling then needs a longer quiet.
	AwaitsStatusSync bool `json:"-"`
}

// Equal reports whether two snapshots show the same cluster state.
func (s Snapshot) Equal(o Snapshot) bool {
	return equalObjects(s.Objects, o.Objects) && maps.EqualFunc(s.CSICalls, o.CSICalls, slices.Equal)
}

func equalObjects(a, b map[string]Object) bool {
	return maps.EqualFunc(a, b, func(x, y Object) bool {
		return x.Kind == y.Kind && x.Name == y.Name && x.Exists == y.Exists && maps.Equal(x.Labels, y.Labels) &&
			maps.Equal(x.Annotations, y.Annotations) && slices.Equal(x.Finalizers, y.Finalizers) &&
			slices.Equal(x.Owners, y.Owners) && x.Phase == y.Phase && slices.Equal(x.Conditions, y.Conditions) &&
			maps.Equal(x.Fields, y.Fields) && slices.Equal(x.Events, y.Events) && maps.Equal(x.EventMessages, y.EventMessages)
	})
}

// kindOrder orders a report's objects the way the lifecycle meets them.
var kindOrder = []string{"CSIDriver", "StorageClass", "PersistentVolumeClaim", "PersistentVolume", "Pod",
	"VolumeAttachment", "Node", "CSINode", "VolumeSnapshotClass", "VolumeSnapshot", "VolumeSnapshotContent",
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
	names map[string]string // generated name or UID -> placeholder
}

// NewNormaliser returns a Normaliser that knows no names yet.
func NewNormaliser() *Normaliser { return &Normaliser{names: map[string]string{}} }

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

// learn records the placeholders for the generated names and UIDs of objs.
func (n *Normaliser) learn(objs Objects, calls []trace.Entry) {
	set := func(raw, placeholder string) {
		if raw != "" {
			if _, known := n.names[raw]; !known {
				n.names[raw] = placeholder
			}
		}
	}
	claimOfUID := map[types.UID]string{}
	for _, c := range objs.PVCs {
		claim := qualified(c.Namespace, c.Name)
		claimOfUID[c.UID] = claim
		set(string(c.UID), "<uid of pvc "+claim+">")
		// The provisioner names the PV, and asks CreateVolume for a
		// volume, pvc-<claim UID>: known before the PV exists.
		set("pvc-"+string(c.UID), "<pv of "+claim+">")
	}
	for _, pv := range objs.PVs {
		claim := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			claim = qualified(ref.Namespace, ref.Name)
		}
		if pvNameRE.MatchString(pv.Name) && claim != "" {
			set(pv.Name, "<pv of "+claim+">")
		}
		if pv.Spec.CSI != nil {
			if claim != "" {
				set(pv.Spec.CSI.VolumeHandle, "<volume of "+claim+">")
			} else {
				set(pv.Spec.CSI.VolumeHandle, "<volume of pv "+pv.Name+">")
			}
		}
		set(string(pv.UID), "<uid of pv "+n.name(pv.Name)+">")
	}
	// CreateVolume "pvc-<uid> -> <handle>": the handle of a claim whose PV
	// may not exist yet, or not any more.
	for _, e := range calls {
		name, handle, ok := strings.Cut(e.Object, " -> ")
		if !ok || e.Verb != "CreateVolume" {
			continue
		}
		if claim, known := claimOfUID[types.UID(strings.TrimPrefix(name, "pvc-"))]; known {
			set(handle, "<volume of "+claim+">")
		}
		if p, known := n.names[name]; known && strings.HasPrefix(p, "<pv of ") {
			set(handle, "<volume of "+strings.TrimPrefix(p, "<pv of "))
		}
	}
	for _, va := range objs.VolumeAttachments {
		if vaNameRE.MatchString(va.Name) {
			pv := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pv = n.name(*va.Spec.Source.PersistentVolumeName)
			}
			set(va.Name, "<attachment of "+pv+" to "+va.Spec.NodeName+">")
		}
		set(string(va.UID), "<uid of attachment "+n.name(va.Name)+">")
	}
	n.learnPodNames(objs.Pods)
	for _, p := range objs.Pods {
		set(string(p.UID), "<uid of pod "+qualified(p.Namespace, p.Name)+">")
		// The kubelet's handle of an inline csi: volume is made of the
		// pod's UID.
		for _, v := range p.Spec.Volumes {
			if v.CSI != nil {
				set(volumeutil.InlineVolumeHandle(p.UID, v.Name), "<inline volume "+v.Name+" of pod "+qualified(p.Namespace, p.Name)+">")
			}
		}
	}
	// A snapshot of a claim gets the content snapcontent-<uid>, and the
	// csi-snapshotter asks the driver for snapshot-<uid>; the handle the
	// driver returns is the snapshot's too.
	for _, vs := range objs.VolumeSnapshots {
		snap := qualified(vs.Namespace, vs.Name)
		set(string(vs.UID), "<uid of volumesnapshot "+snap+">")
		set("snapcontent-"+string(vs.UID), "<content of volumesnapshot "+snap+">")
		set("snapshot-"+string(vs.UID), "<snapshot of volumesnapshot "+snap+">")
	}
	for _, c := range objs.VolumeSnapshotContents {
		ref := c.Spec.VolumeSnapshotRef
		if c.Status != nil && c.Status.SnapshotHandle != nil && ref.Name != "" {
			set(*c.Status.SnapshotHandle, "<handle of volumesnapshot "+qualified(ref.Namespace, ref.Name)+">")
		}
		set(string(c.UID), "<uid of volumesnapshotcontent "+n.name(c.Name)+">")
	}
	for _, node := range objs.Nodes {
		set(string(node.UID), "<uid of node "+node.Name+">")
	}
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
	if len(n.names) > 0 {
		raws := slices.Collect(maps.Keys(n.names))
		// Longest first, so that a name never replaces part of a longer one.
		sort.Slice(raws, func(i, j int) bool {
			return len(raws[i]) > len(raws[j]) || len(raws[i]) == len(raws[j]) && raws[i] < raws[j]
		})
		for _, raw := range raws {
			if strings.Contains(s, raw) {
				s = strings.ReplaceAll(s, raw, n.names[raw])
			}
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
// finalizers, owners.
func (n *Normaliser) object(kind string, m metav1.ObjectMeta) Object {
	o := Object{Kind: kind, Name: n.name(qualified(m.Namespace, m.Name)), Exists: true,
		Labels: n.values(m.Labels), Annotations: n.values(m.Annotations, droppedAnnotations...),
		Fields: map[string]string{}}
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

// Snapshot learns the generated names in objs and calls and returns them
// normalised. The step fields are left for the caller.
func (n *Normaliser) Snapshot(objs Objects, calls []trace.Entry) Snapshot {
	n.learn(objs, calls)
	s := Snapshot{Objects: map[string]Object{}, CSICalls: map[string][]string{}, AwaitsStatusSync: awaitsStatusSync(objs)}
	add := func(o Object) {
		if len(o.Fields) == 0 {
			o.Fields = nil
		}
		s.Objects[o.Key()] = o
	}
	system := func(namespace string) bool { return slices.Contains(systemNamespaces, namespace) }
	for _, c := range objs.PVCs {
		if system(c.Namespace) {
			continue
		}
		o := n.object("PersistentVolumeClaim", c.ObjectMeta)
		o.Phase = string(c.Status.Phase)
		setField(o.Fields, "volumeName", n.name(c.Spec.VolumeName))
		if c.Spec.StorageClassName != nil {
			setField(o.Fields, "storageClassName", *c.Spec.StorageClassName)
		}
		// Sizes and the resize status: what volume expansion changes.
		setField(o.Fields, "request", quantity(c.Spec.Resources.Requests))
		setField(o.Fields, "capacity", quantity(c.Status.Capacity))
		setField(o.Fields, "allocatedResources", quantity(c.Status.AllocatedResources))
		setField(o.Fields, "allocatedResourceStatus", string(c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]))
		for _, cond := range c.Status.Conditions {
			o.Conditions = append(o.Conditions, condition(string(cond.Type), string(cond.Status), cond.Reason))
		}
		add(o)
	}
	for _, pv := range objs.PVs {
		o := n.object("PersistentVolume", pv.ObjectMeta)
		o.Phase = string(pv.Status.Phase)
		if ref := pv.Spec.ClaimRef; ref != nil {
			setField(o.Fields, "claimRef", qualified(ref.Namespace, ref.Name))
		}
		setField(o.Fields, "storageClassName", pv.Spec.StorageClassName)
		setField(o.Fields, "reclaimPolicy", string(pv.Spec.PersistentVolumeReclaimPolicy))
		setField(o.Fields, "capacity", quantity(pv.Spec.Capacity))
		if src := pv.Spec.CSI; src != nil {
			setField(o.Fields, "csi.driver", src.Driver)
			setField(o.Fields, "csi.volumeHandle", n.name(src.VolumeHandle))
			for k, v := range src.VolumeAttributes {
				setField(o.Fields, "csi.volumeAttributes."+k, n.value(v))
			}
		}
		add(o)
	}
	for _, p := range objs.Pods {
		if system(p.Namespace) {
			continue
		}
		o := n.object("Pod", p.ObjectMeta)
		o.Phase = string(p.Status.Phase)
		setField(o.Fields, "nodeName", p.Spec.NodeName)
		// What kubectl shows of the pod: each container's state.
		setField(o.Fields, "initContainers", containerStates(p.Status.InitContainerStatuses, false))
		setField(o.Fields, "containers", containerStates(p.Status.ContainerStatuses, true))
		for _, cond := range p.Status.Conditions {
			o.Conditions = append(o.Conditions, condition(string(cond.Type), string(cond.Status), cond.Reason))
		}
		add(o)
	}
	for _, va := range objs.VolumeAttachments {
		o := n.object("VolumeAttachment", va.ObjectMeta)
		setField(o.Fields, "attacher", va.Spec.Attacher)
		setField(o.Fields, "nodeName", va.Spec.NodeName)
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
			setField(o.Fields, "source", n.name(*pv))
		}
		o.Fields["attached"] = fmt.Sprint(va.Status.Attached)
		if e := va.Status.AttachError; e != nil {
			setField(o.Fields, "attachError", n.value(e.Message))
		}
		if e := va.Status.DetachError; e != nil {
			setField(o.Fields, "detachError", n.value(e.Message))
		}
		add(o)
	}
	for _, node := range objs.Nodes {
		o := n.object("Node", node.ObjectMeta)
		var attached, inUse []string
		for _, a := range node.Status.VolumesAttached {
			attached = append(attached, n.value(string(a.Name)))
		}
		for _, u := range node.Status.VolumesInUse {
			inUse = append(inUse, n.value(string(u)))
		}
		sort.Strings(attached)
		sort.Strings(inUse)
		setField(o.Fields, "volumesAttached", strings.Join(attached, ", "))
		setField(o.Fields, "volumesInUse", strings.Join(inUse, ", "))
		var taints []string
		for _, t := range node.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		setField(o.Fields, "taints", strings.Join(taints, ", "))
		for _, cond := range node.Status.Conditions {
			o.Conditions = append(o.Conditions, condition(string(cond.Type), string(cond.Status), cond.Reason))
		}
		add(o)
	}
	for _, cn := range objs.CSINodes {
		o := n.object("CSINode", cn.ObjectMeta)
		for _, d := range cn.Spec.Drivers {
			v := "nodeID=" + d.NodeID
			if len(d.TopologyKeys) > 0 {
				v += " topologyKeys=" + strings.Join(d.TopologyKeys, ",")
			}
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				v += fmt.Sprintf(" allocatable=%d", *d.Allocatable.Count)
			}
			o.Fields["driver "+d.Name] = v
		}
		add(o)
	}
	for _, sc := range objs.StorageClasses {
		o := n.object("StorageClass", sc.ObjectMeta)
		setField(o.Fields, "provisioner", sc.Provisioner)
		if sc.ReclaimPolicy != nil {
			setField(o.Fields, "reclaimPolicy", string(*sc.ReclaimPolicy))
		}
		if sc.VolumeBindingMode != nil {
			setField(o.Fields, "volumeBindingMode", string(*sc.VolumeBindingMode))
		}
		add(o)
	}
	for _, d := range objs.CSIDrivers {
		o := n.object("CSIDriver", d.ObjectMeta)
		if d.Spec.AttachRequired != nil {
			o.Fields["attachRequired"] = fmt.Sprint(*d.Spec.AttachRequired)
		}
		if d.Spec.PodInfoOnMount != nil {
			o.Fields["podInfoOnMount"] = fmt.Sprint(*d.Spec.PodInfoOnMount)
		}
		add(o)
	}
	n.snapshotObjects(add, objs)
	n.workloadObjects(add, objs.Workloads)
	n.events(s.Objects, objs.Events)
	for _, o := range s.Objects {
		sort.Strings(o.Conditions)
	}
	// Calls by volume, compared as scenario csiCalls checks compare them:
	// informational calls left out, a sidecar's immediate repeat of a
	// controller call counted once (the real sidecars race their caches).
	byVolume := map[string][]trace.Entry{}
	for _, e := range calls {
		if e.Kind != trace.CSI || scenarios.IsInformationalCSICall(e.Verb) {
			continue
		}
		volume := e.Object
		if name, handle, ok := strings.Cut(volume, " -> "); ok {
			volume = handle
			if handle == "" {
				volume = name
			}
		}
		if volume == "" {
			continue
		}
		key := n.name(volume)
		byVolume[key] = append(byVolume[key], e)
	}
	for key, entries := range byVolume {
		for _, e := range scenarios.WithoutSidecarRepeats(entries) {
			s.CSICalls[key] = append(s.CSICalls[key], e.Verb)
		}
	}
	if len(s.CSICalls) == 0 {
		s.CSICalls = nil
	}
	return s
}

// events adds the reasons and messages of the events about each object
// to it; objects that are gone get an entry of their own that only has
// events.
func (n *Normaliser) events(objects map[string]Object, events []corev1.Event) {
	messages := map[string]map[string]map[string]bool{} // object key -> reason -> messages
	for _, e := range events {
		// Only the lifecycle's objects: a control plane also reports on
		// its own (a ServiceCIDR, say), which the simulator has not.
		if slices.Contains(systemNamespaces, e.InvolvedObject.Namespace) || !slices.Contains(kindOrder, e.InvolvedObject.Kind) {
			continue
		}
		// What a real kubelet says of the machine it runs on, not of the
		// lifecycle: these machines have cgroup v1.
		if slices.Contains(machineEventReasons, e.Reason) {
			continue
		}
		key := Object{Kind: e.InvolvedObject.Kind, Name: n.name(qualified(e.InvolvedObject.Namespace, e.InvolvedObject.Name))}.Key()
		if e.InvolvedObject.Namespace == "" {
			key = Object{Kind: e.InvolvedObject.Kind, Name: n.name(e.InvolvedObject.Name)}.Key()
		}
		if messages[key] == nil {
			messages[key] = map[string]map[string]bool{}
			if _, ok := objects[key]; !ok {
				kind, name, _ := strings.Cut(key, " ")
				objects[key] = Object{Kind: kind, Name: name}
			}
		}
		if messages[key][e.Reason] == nil {
			messages[key][e.Reason] = map[string]bool{}
		}
		messages[key][e.Reason][containerImage.ReplaceAllString(n.value(e.Message), `Container image "<image>"`)] = true
	}
	for key, byReason := range messages {
		o := objects[key]
		o.Events = slices.Sorted(maps.Keys(byReason))
		o.EventMessages = map[string]string{}
		for reason, set := range byReason {
			o.EventMessages[reason] = strings.Join(slices.Sorted(maps.Keys(set)), " | ")
		}
		objects[key] = o
	}
}

// machineEventReasons are the reasons of events about the machine a
// real node runs on, left out of snapshots.
var machineEventReasons = []string{"CgroupV1"}

// containerImage is the image in the kubelet's Pulled message: real nodes
// run csisim's workload image in every container (nothing can be pulled
// here), the simulator names the image the pod asks for.
var containerImage = regexp.MustCompile(`Container image "[^"]*"`)

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

func condition(typ, status, reason string) string {
	s := typ + "=" + status
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
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
