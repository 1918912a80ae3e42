package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/timing"
)

// Scenario is one parsed scenario file.
type Scenario struct {
	Name        string
	Description string
	// File is the path the scenario was loaded from, as used in messages.
	File    string
	Cluster Cluster
	// Drivers are CSI drivers to run beside the driver under test
	// (drivers.go).
	Drivers []ExtraDriver
	// Needs are the driver capabilities the scenario needs: those of
	// needs:, then those its cluster asks imply (zones, a capacity, a
	// volume limit, multiNode) and ${driver.topologyKey} implies
	// (topology). A run with a driver profile that lacks one skips it
	// (SkipReason).
	Needs []profile.Capability
	// Lacks are the capabilities the scenario is about a driver not
	// having (lacks:): a driver that refuses the MULTI_NODE access modes
	// (readwritemany-unsupported). A run with a driver that has one, as it
	// is started for the scenario, skips it (SkipReason).
	Lacks []profile.Capability
	// DriverVars are the driver variables (driver.name, ...) the scenario
	// uses, for SkipReason to check that the profile sets them.
	DriverVars []string
	// Expect names the invariant violations the run must show.
	Expect Expect
	Steps  []Step
	// Finally are steps that run after Steps whatever happened in them,
	// to clean up; a failure among them is reported too.
	Finally []Step
	// Fidelity are the differences from the real components that the file
	// explains (fidelity:), which csisim diff marks so in its report
	// (fidelity.go).
	Fidelity []Explanation
}

// Cluster says what the scenario needs from the cluster it runs on. The
// simulator builds it; backends that talk to an existing cluster may ignore it.
type Cluster struct {
	// Nodes names the worker nodes. Empty means the backend decides.
	Nodes []string
	// Zones gives nodes a zone (their topology.kubernetes.io/zone label,
	// and the zone their CSI node plugin reports). Nodes not named have none.
	Zones map[string]string
	// SELinux names the nodes whose kernel has SELinux enabled
	// (cluster.seLinux); the others have it disabled. On an enabled node a
	// pod's seLinuxOptions make the kubelet mount the volumes of a driver
	// whose CSIDriver says seLinuxMount: true with -o context=... .
	SELinux []string
	// DriverArgs are flags for the simulator's own driver (csisim driver
	// --help lists them), e.g. --capacity=10Gi for a storage pool per zone.
	DriverArgs []string
	// DriverName is the name the simulator's own driver is started with
	// (and so the provisioner of its classes, the CSIDriver's name); empty
	// means hostpath.csisim.io. A scenario that applies manifests written
	// for another driver names that driver here.
	DriverName string

	// What the scenario asks of any driver; a driver profile turns each
	// into its flags (Cluster.DriverFlags), and a run with a profile that
	// has no flag for one skips the scenario.

	// Capacity is the storage each zone's pool holds (the profile's
	// flags.capacity), e.g. 2Gi, for storage capacity tracking.
	Capacity string
	// VolumeLimit is how many volumes each node takes (flags.volumeLimit).
	VolumeLimit int
	// MultiNode turns on the MULTI_NODE_* access modes (flags.multiNode).
	MultiNode bool
	// Flags name flag sets of the profile's flags.extra, e.g.
	// strictParameters.
	Flags []string
	// Deploy is the driver's own deployment manifests the cluster is
	// started with (a file or directory, resolved against the scenario's
	// directory): csisim run --deploy. Only the simulator runs it; the
	// runner refuses a backend that was not started with it.
	Deploy string
	// HealthMonitor runs the external-health-monitor sidecar beside the
	// controller plugin (cluster.healthMonitor: true), as a deployment
	// that adds it does; a run without it has none.
	HealthMonitor bool
	// Timing is the cluster's timing of node loss (cluster.timing:
	// {speedup: N}): the node lifecycle controller's periods, the pods'
	// default toleration of a lost node, the attach/detach controller's
	// wait for unmount and the kubelets' heartbeats, all divided by N on
	// whichever backend runs the scenario. The zero value is v1.37's.
	Timing timing.Timing
}

// Step is one thing a scenario does. Exactly one of the action pointers is
// set; a fault step (any of fault.Kinds) sets Fault.
type Step struct {
	Index int    // position in the scenario, from 1
	Name  string // from the file, or derived from the action
	Line  int    // line of the step in File
	// File is the file the step is written in: the scenario file, or a
	// file it includes.
	File string
	// Finally marks a step of the scenario's finally: list.
	Finally bool
	// Needs are capabilities without which the step's check does not
	// apply (a VolumeAttachment checked where the driver attaches): with
	// a driver that lacks one, the step is skipped and the rest runs.
	Needs []profile.Capability

	Apply        *Apply
	Wait         *Wait
	Consistently *Consistently
	Assert       *Assert
	Delete       *Delete
	Patch        *Patch
	Sleep        *Sleep
	Fault        *fault.Fault
}

// check is the check of a wait, assert or consistently step, or nil.
func (s *Step) check() *Check {
	switch {
	case s.Wait != nil:
		return &s.Wait.Check
	case s.Assert != nil:
		return &s.Assert.Check
	case s.Consistently != nil:
		return &s.Consistently.Check
	}
	return nil
}

// Action names the step's action as written in the file: "apply", "wait", ...
func (s *Step) Action() string {
	switch {
	case s.Apply != nil:
		return actionApply
	case s.Wait != nil:
		return actionWait
	case s.Consistently != nil:
		return actionConsistently
	case s.Assert != nil:
		return actionAssert
	case s.Delete != nil:
		return actionDelete
	case s.Patch != nil:
		return actionPatch
	case s.Sleep != nil:
		return actionSleep
	case s.Fault != nil:
		return FaultStepKey(s.Fault.Kind)
	}
	return ""
}

// The action keys of a step, in the order they are listed in messages.
const (
	actionApply        = "apply"
	actionWait         = "wait"
	actionConsistently = "consistently"
	actionAssert       = "assert"
	actionDelete       = "delete"
	actionPatch        = "patch"
	actionSleep        = "sleep"
)

// actionKeys are the step's action keys: the ones above, then a fault step
// for every fault (fault.Kinds, which scenarios/README.md documents).
var actionKeys = append([]string{actionApply, actionWait, actionConsistently, actionAssert, actionDelete, actionPatch, actionSleep}, faultKeys()...)

func faultKeys() []string {
	keys := make([]string, len(fault.Kinds))
	for i, k := range fault.Kinds {
		keys[i] = FaultStepKey(k)
	}
	return keys
}

// FaultStepKey is the step key of fault kind k: its name in lowerCamel, the
// one casing of scenario keys (node-loss is nodeLoss, stale-volumeattachment
// staleVolumeAttachment).
func FaultStepKey(k fault.Kind) string {
	if k == fault.StaleVolumeAttachment {
		return "staleVolumeAttachment"
	}
	return lowerCamel(string(k))
}

// faultKind is the fault kind of step key key, if it is one.
func faultKind(key string) (fault.Kind, bool) {
	for _, k := range fault.Kinds {
		if FaultStepKey(k) == key {
			return k, true
		}
	}
	return "", false
}

// Apply creates each object, or replaces it when it already exists.
type Apply struct {
	// File is the manifest file as written in the scenario (relative to the
	// scenario file); empty for an inline manifest.
	File string
	// Namespace is used for namespaced objects whose manifest has none.
	// Empty means "default".
	Namespace string
	Objects   []Manifest
}

// Manifest is one object read from a manifest, with where it came from so
// that a failure to apply it can point at it.
type Manifest struct {
	File   string // the scenario file for inline manifests, else the manifest file
	Line   int    // first line of the object's YAML document in File
	Object map[string]any
	// doc is the document's text, and lineBase the line in File before
	// its first: they give a field's line (FieldLine). The text, not its
	// parsed tree, is kept: a tree costs some twenty times the text, and a
	// generated scenario of 10,000 objects held 240 MB of them for the
	// few lines an error message asks for.
	doc      string
	lineBase int
}

// Describe names the object the way messages and step names do: Kind/name.
func (m Manifest) Describe() string {
	kind, _ := m.Object["kind"].(string)
	meta, _ := m.Object["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return kind + "/" + name
}

// DefaultWaitTimeout bounds a wait step that sets no timeout, so that a
// scenario can never hang forever.
const DefaultWaitTimeout = 60 * time.Second

// Wait polls until its Check holds or Timeout elapses.
type Wait struct {
	Check
	Timeout time.Duration
}

// Consistently holds its Check for the whole of For: it looks from the
// start and fails at the first moment the check does not hold.
type Consistently struct {
	Check
	For time.Duration
}

// Assert evaluates its Check once.
type Assert struct {
	Check
}

// Check is a condition on the cluster, shared by wait and assert. Either
// Object or CSICalls is set.
type Check struct {
	Object        ObjectRef
	Namespace     string
	LabelSelector string
	// JSONPath is evaluated on the object (or, for a kind without a name, on
	// the list with its items). With Equals the output must equal it;
	// with StartsWith begin with it (an error's code, where the words
	// after it are each driver's own); with neither, be non-empty.
	JSONPath   string
	Equals     *string
	StartsWith *string
	// Gone holds when the named object does not exist.
	Gone bool
	// Count, for a kind without a name, is the number of items to expect.
	Count *int
	// Match is a partial object the object must contain (see
	// matchObject): mappings match as subsets, lists element by element,
	// scalars as text.
	Match any
	// Log, if set, is a container of the pod Object: the check looks at
	// its log (what kubectl logs shows) as {lines: [...]} instead of the
	// pod.
	Log string
	// Save captures values from the object once the check holds.
	Save     []SaveVar
	CSICalls *CSICallCheck
}

// SaveVar captures the output of JSONPath into the variable Name.
type SaveVar struct {
	Name     string
	JSONPath string
}

// CSICallCheck compares the CSI calls a driver received with a list of
// method names. Informational calls (GetPluginInfo, Probe, NodeGetInfo, ...)
// are left out before comparing.
type CSICallCheck struct {
	// Sequence must equal the calls exactly; Contains must appear among them
	// in order, with other calls allowed in between. Exactly one is set.
	Sequence []string
	Contains []string
	// Volume, if set, keeps only the calls on that volume ID.
	Volume string
	// MountFlag, if set, keeps only the calls whose volume capability
	// has that mount flag, e.g. the kubelet's SELinux option
	// context="system_u:object_r:container_file_t:s0:c1,c2".
	MountFlag string
	// Driver, if set, keeps only the calls to that driver, one of the
	// scenario's drivers: or ${driver.name}. OtherDriver says it is one
	// of drivers:, whose calls are not fitted to the driver under test.
	Driver      string
	OtherDriver bool
	// Unasked are the methods the run left out of Sequence and Contains
	// because the driver under test lacks the capability without which
	// no component calls them (fitToDriver), and Why says which; empty
	// as a scenario is written.
	Unasked []string
	Why     string
}

// Delete deletes one object. It does not wait for the object to disappear:
// follow it with a wait step with gone: true.
type Delete struct {
	Object    ObjectRef
	Namespace string
	// Propagation is "Foreground", "Background" or "Orphan"; empty leaves
	// the choice to the server.
	Propagation string
	// IgnoreNotFound makes deleting an object that does not exist a pass.
	IgnoreNotFound bool
	// Force deletes with grace period 0 (kubectl delete --force
	// --grace-period=0): the object goes without waiting for its kubelet.
	Force bool
}

// Sleep pauses the scenario on the runner's clock.
type Sleep struct {
	Duration time.Duration
}

// ObjectRef is a kubectl-style reference: "pvc/data" names one object;
// "persistentvolumes" (no name) means every object of that kind. Kind is
// anything discovery resolves: a short name, plural, singular or Kind,
// optionally qualified by group ("volumeattachments.storage.k8s.io").
type ObjectRef struct {
	Kind string
	Name string
}

func (r ObjectRef) String() string {
	if r.Name == "" {
		return r.Kind
	}
	return r.Kind + "/" + r.Name
}

// parseObjectRef splits "kind/name" or "kind".
func parseObjectRef(s string) (ObjectRef, error) {
	kind, name, hasName := strings.Cut(s, "/")
	switch {
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\n"):
		return ObjectRef{}, fmt.Errorf("object %q contains spaces; write kind/name, e.g. pvc/data", s)
	case kind == "":
		return ObjectRef{}, fmt.Errorf("object %q has no kind; write kind/name, e.g. pvc/data", s)
	case hasName && name == "":
		return ObjectRef{}, fmt.Errorf("object %q has an empty name; write kind/name, or just the kind to list", s)
	case strings.Contains(name, "/"):
		return ObjectRef{}, fmt.Errorf("object %q has more than one '/'; write kind/name (the namespace goes in namespace:)", s)
	}
	return ObjectRef{Kind: kind, Name: name}, nil
}
