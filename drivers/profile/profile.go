// Package profile reads driver profiles: YAML files that tell csisim how to
// start a CSI driver, what it can do, and which StorageClass parameters and
// flags the library's scenarios should use with it. A profile is to csisim
// what testdriver.yaml (DriverInfo) is to the Kubernetes e2e storage
// framework: with it, one library of scenarios runs against any driver,
// and a scenario whose needs the driver lacks is skipped with the reason.
//
// Profiles for csisim's own driver, its mock and the csi-test mock driver
// live in drivers/profiles/.
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Capability is something a driver can do that a scenario may need.
type Capability string

// The capabilities a profile may declare and a scenario may need. The names
// are the profile file's keys under capabilities.
const (
	// Attach: the driver has ControllerPublishVolume (CSIDriver
	// attachRequired true).
	Attach Capability = "attach"
	// Block: raw block volumes (volumeMode: Block).
	Block Capability = "block"
	// Snapshots: CREATE_DELETE_SNAPSHOT, and restores from snapshots.
	Snapshots Capability = "snapshots"
	// Clones: a claim with another claim as its dataSource.
	Clones Capability = "clones"
	// ExpansionOnline: ControllerExpandVolume/NodeExpandVolume while a pod
	// uses the volume.
	ExpansionOnline Capability = "expansionOnline"
	// ExpansionOffline: expansion while no pod uses the volume.
	ExpansionOffline Capability = "expansionOffline"
	// Topology: VOLUME_ACCESSIBILITY_CONSTRAINTS with the profile's topology keys.
	Topology Capability = "topology"
	// Zones: the driver can be told each node's zone (the profile's
	// flags.zone) and reports it under its topology key.
	Zones Capability = "zones"
	// Capacity: GetCapacity, for storage capacity tracking (flags.capacity
	// sets it).
	Capacity Capability = "capacity"
	// VolumeLimits: NodeGetInfo's max_volumes_per_node (flags.volumeLimit sets it).
	VolumeLimits Capability = "volumeLimits"
	// Ephemeral: CSI inline ephemeral volumes (volumeLifecycleModes Ephemeral).
	Ephemeral Capability = "ephemeral"
	// MultiNode: the MULTI_NODE_* access modes (ReadWriteMany, ReadOnlyMany).
	MultiNode Capability = "multiNode"
	// SingleNodeMultiWriter: SINGLE_NODE_SINGLE_WRITER/MULTI_WRITER, which
	// ReadWriteOncePod needs.
	SingleNodeMultiWriter Capability = "singleNodeMultiWriter"
	// FSGroup: the driver applies a pod's fsGroup (CSIDriver fsGroupPolicy
	// File, or VOLUME_MOUNT_GROUP).
	FSGroup Capability = "fsGroup"
	// PodInfo: the driver wants the pod's information on NodePublishVolume
	// (CSIDriver podInfoOnMount).
	PodInfo Capability = "podInfo"
	// StageUnstage: STAGE_UNSTAGE_VOLUME (NodeStageVolume before publish).
	StageUnstage Capability = "stageUnstage"
	// RealMounts: the driver mounts for real, so the built-in workload can
	// write and read back data (not the in-memory mocks).
	RealMounts Capability = "realMounts"
	// SharedState: every plugin process of a run sees the same volumes, so a
	// volume made by the controller plugin can be used on any node.
	SharedState Capability = "sharedState"
	// StateDir: the driver keeps its volume records under {stateDir}, so
	// that a plugin restarted with state: keep finds them, and one
	// restarted with state: lose (its directory emptied) does not.
	StateDir Capability = "stateDir"
	// ControllerOnlyExpansion: ControllerExpandVolume of a volume of the
	// library's class answers node_expansion_required false, so that a
	// claim grows without a pod (a file share's, a directory's).
	ControllerOnlyExpansion Capability = "controllerOnlyExpansion"
	// SurvivesRestart: a plugin process that crashes or is restarted with
	// state: keep finds the volumes it knew (in {stateDir}, or in the
	// memory of csisim's in-process mock), so a crash does not lose them.
	SurvivesRestart Capability = "survivesRestart"
	// CSISimErrors: the driver refuses in the words of csisim's own driver;
	// scenarios that compare a driver's error message word for word, as the
	// real sidecars copy it into events and VolumeAttachments, need it.
	CSISimErrors Capability = "csisimErrors"
)

// Capabilities lists every capability in the order a report prints them.
var Capabilities = []Capability{Attach, Block, Snapshots, Clones, ExpansionOnline, ExpansionOffline,
	Topology, Zones, Capacity, VolumeLimits, Ephemeral, MultiNode, SingleNodeMultiWriter, FSGroup,
	PodInfo, StageUnstage, RealMounts, SharedState, StateDir, SurvivesRestart, ControllerOnlyExpansion, CSISimErrors}

// Layout says how a driver's processes are laid out.
type Layout string

const (
	// Split: the controller plugin is a process of its own (with {nodeID}
	// "controller"), and every node runs a node plugin; they share state
	// only through the storage backend under {root}.
	Split Layout = "split"
	// Combined: one process per node serves the identity, controller and
	// node services; the first node's process is also the controller
	// plugin, as csi-driver-host-path's single pod is.
	Combined Layout = "combined"
)

// Command is how to run one driver process. Args and Env may contain the
// placeholders {endpoint}, {nodeID}, {stateDir}, {root}, {zone} and
// {driverName}; {csisim} in Path stands for the csisim binary.
type Command struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
}

// Start says how to start the driver.
type Start struct {
	Layout Layout `json:"layout"`
	// Command runs every process of a combined driver.
	Command *Command `json:"command,omitempty"`
	// Controller and Node run a split driver's controller and node plugins.
	Controller *Command `json:"controller,omitempty"`
	Node       *Command `json:"node,omitempty"`
	// Mock runs csisim's in-process mock driver instead of a process.
	Mock bool `json:"mock,omitempty"`
	// Build, if set, is a Go package to build the driver binary from, as
	// `go build`'s argument (e.g. a module path@version); {built} in a
	// command's Path stands for the binary it makes.
	Build string `json:"build,omitempty"`
}

// Flags are extra driver arguments for what a scenario asks of the
// cluster; each may contain {zone}, {capacity} or {limit}. A scenario that
// needs one the profile lacks is skipped.
type Flags struct {
	// Zone is added to a node plugin whose node has a zone.
	Zone []string `json:"zone,omitempty"`
	// Capacity is added to every plugin when a scenario sets a capacity.
	Capacity []string `json:"capacity,omitempty"`
	// VolumeLimit is added to every node plugin when a scenario sets a
	// per-node volume limit.
	VolumeLimit []string `json:"volumeLimit,omitempty"`
	// MultiNode is added to every plugin when a scenario needs the
	// MULTI_NODE_* access modes.
	MultiNode []string `json:"multiNode,omitempty"`
	// Extra are named flag sets a scenario may ask for by name.
	Extra map[string][]string `json:"extra,omitempty"`
}

// StorageClass is what the library's StorageClass for this driver holds.
type StorageClass struct {
	// Parameters of the class; the driver's own (e.g. kind: directory).
	Parameters map[string]string `json:"parameters,omitempty"`
	// BlockParameters, if set, replace Parameters for a class of raw block
	// volumes (csisim's driver: kind: block).
	BlockParameters map[string]string `json:"blockParameters,omitempty"`
	// FSType is csi.storage.k8s.io/fstype, if the driver needs one.
	FSType string `json:"fsType,omitempty"`
}

// Profile is one driver profile.
type Profile struct {
	// Name is the driver name GetPluginInfo reports, and the provisioner
	// of its StorageClass and the name of its CSIDriver.
	Name string `json:"name"`
	// Description says what the driver is, for reports.
	Description string `json:"description,omitempty"`
	Start       Start  `json:"start"`
	// Capabilities maps a capability to whether the driver has it; one
	// not listed is false.
	Capabilities map[Capability]bool `json:"capabilities"`
	// TopologyKeys are the keys of the driver's topology segments, the
	// first being the one scenarios constrain on.
	TopologyKeys []string `json:"topologyKeys,omitempty"`
	// AccessModes are the PersistentVolume access modes the driver
	// supports, e.g. [ReadWriteOnce, ReadWriteOncePod].
	AccessModes []string `json:"accessModes,omitempty"`
	// FSGroupPolicy is the CSIDriver's fsGroupPolicy (default
	// ReadWriteOnceWithFSType).
	FSGroupPolicy string       `json:"fsGroupPolicy,omitempty"`
	StorageClass  StorageClass `json:"storageClass,omitempty"`
	Flags         Flags        `json:"flags,omitempty"`
	// MaxNodes, if not 0, is how many nodes the driver can serve at once: a
	// driver whose node plugins all answer NodeGetInfo with one node ID, or
	// keep the volumes in one process, serves one. A scenario with more
	// nodes is skipped.
	MaxNodes int `json:"maxNodes,omitempty"`
	// NotSupported lists library scenarios this driver cannot run, with
	// the reason, for what the capabilities cannot express.
	NotSupported map[string]string `json:"notSupported,omitempty"`

	// File is the file the profile was read from.
	File string `json:"-"`
}

// Has says whether the driver has capability c.
func (p *Profile) Has(c Capability) bool { return p.Capabilities[c] }

// Missing returns the capabilities of needs the driver lacks, in order.
func (p *Profile) Missing(needs []Capability) []Capability {
	var out []Capability
	for _, c := range needs {
		if !p.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Vars are the values scenarios see as ${driver.<key>}: name,
// storageClass (the library's class name for the driver), topologyKey,
// provisioner (the same as name), fsGroupPolicy, attachRequired and
// parameter.<key> for each StorageClass parameter.
func (p *Profile) Vars() map[string]string {
	v := map[string]string{
		"name":           p.Name,
		"provisioner":    p.Name,
		"storageClass":   StorageClassName,
		"attachRequired": fmt.Sprint(p.Has(Attach)),
		"fsGroupPolicy":  p.FSGroupPolicy,
		"podInfoOnMount": fmt.Sprint(p.Has(PodInfo)),
	}
	if len(p.TopologyKeys) > 0 {
		v["topologyKey"] = p.TopologyKeys[0]
	}
	if v["fsGroupPolicy"] == "" {
		v["fsGroupPolicy"] = "ReadWriteOnceWithFSType"
	}
	for k, val := range p.StorageClass.Parameters {
		v["parameter."+k] = val
	}
	return v
}

// StorageClassName is the name of the StorageClass the library makes for
// the driver under test.
const StorageClassName = "csisim-sc"

// Load reads and checks the profile in file. Unknown keys are an error, so
// that a typo cannot silently drop a setting.
func Load(file string) (*Profile, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("driver profile: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver profile %s: %w", file, err)
	}
	p.File = file
	return p, nil
}

// Parse reads and checks a profile.
func Parse(data []byte) (*Profile, error) {
	var p Profile
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &p); err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Profile) check() error {
	var errs []error
	if p.Name == "" {
		errs = append(errs, errors.New("name: required (the driver name GetPluginInfo reports)"))
	}
	switch p.Start.Layout {
	case Split:
		if !p.Start.Mock && (p.Start.Controller == nil || p.Start.Node == nil) {
			errs = append(errs, errors.New("start: layout split needs controller and node commands"))
		}
		if p.Start.Command != nil {
			errs = append(errs, errors.New("start.command: only for layout combined; split uses controller and node"))
		}
	case Combined:
		if !p.Start.Mock && p.Start.Command == nil {
			errs = append(errs, errors.New("start: layout combined needs command"))
		}
		if p.Start.Controller != nil || p.Start.Node != nil {
			errs = append(errs, errors.New("start.controller/node: only for layout split; combined uses command"))
		}
	default:
		errs = append(errs, fmt.Errorf("start.layout: %q: want split or combined", p.Start.Layout))
	}
	for c := range p.Capabilities {
		if !slices.Contains(Capabilities, c) {
			errs = append(errs, fmt.Errorf("capabilities.%s: unknown capability; known: %s", c, capabilityList()))
		}
	}
	for _, c := range []*Command{p.Start.Command, p.Start.Controller, p.Start.Node} {
		if c != nil && strings.Contains(c.Path, "{built}") && p.Start.Build == "" {
			errs = append(errs, errors.New("start: a command runs {built}, but start.build does not say what to build"))
			break
		}
	}
	if p.Has(Topology) && len(p.TopologyKeys) == 0 {
		errs = append(errs, errors.New("topologyKeys: required with capabilities.topology"))
	}
	if p.Has(Zones) && len(p.Flags.Zone) == 0 {
		errs = append(errs, errors.New("flags.zone: required with capabilities.zones (how the driver learns a node's zone)"))
	}
	return errors.Join(errs...)
}

func capabilityList() string {
	names := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Dir is where the shipped profiles live, relative to the repository root.
const Dir = "drivers/profiles"

// Resolve finds a profile by file name or by the name of a shipped profile
// ("csisim", "mock", "csi-test-mock"), looking in dir.
func Resolve(nameOrFile, dir string) (string, error) {
	if strings.ContainsRune(nameOrFile, '/') || strings.HasSuffix(nameOrFile, ".yaml") {
		return nameOrFile, nil
	}
	file := filepath.Join(dir, nameOrFile+".yaml")
	if _, err := os.Stat(file); err != nil {
		known, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for i, k := range known {
			known[i] = strings.TrimSuffix(filepath.Base(k), ".yaml")
		}
		sort.Strings(known)
		return "", fmt.Errorf("driver profile %q: no such file; the shipped profiles are %s", nameOrFile, strings.Join(known, ", "))
	}
	return file, nil
}
