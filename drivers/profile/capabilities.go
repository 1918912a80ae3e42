package profile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csisim/csisim/drivers/driverinfo"
)

// Capability is something a driver can do that a scenario may need. Some
// the running driver says of itself (Asked): those a profile need not
// declare, and may not contradict. The others only the profile can say.
type Capability string

// The capabilities a scenario may need. The names are the profile file's
// keys under capabilities and a scenario's under needs.
const (
	// Attach: ControllerPublishVolume. Asked: CONTROLLER_SERVICE and
	// PUBLISH_UNPUBLISH_VOLUME, as the external-attacher decides at start.
	Attach Capability = "attach"
	// Block: raw block volumes (volumeMode: Block). Declared: CSI has no
	// capability for it.
	Block Capability = "block"
	// Snapshots: CREATE_DELETE_SNAPSHOT, and restores from snapshots.
	// Asked.
	Snapshots Capability = "snapshots"
	// ListSnapshots: LIST_SNAPSHOTS, with which the csi-snapshotter asks
	// the driver about a pre-provisioned snapshot (its readiness and
	// size); without it the sidecar takes such a snapshot as ready, with
	// no size. Asked.
	ListSnapshots Capability = "listSnapshots"
	// Clones: CLONE_VOLUME, a claim with another claim as its
	// dataSource. Asked.
	Clones Capability = "clones"
	// ExpansionOnline: expansion while a pod uses the volume. Declared;
	// refused if the driver reports no EXPAND_VOLUME (controller or node),
	// or VolumeExpansion OFFLINE.
	ExpansionOnline Capability = "expansionOnline"
	// ExpansionOffline: expansion while no pod uses the volume. Declared;
	// refused if the driver reports no EXPAND_VOLUME.
	ExpansionOffline Capability = "expansionOffline"
	// NodeExpansion: the driver grows the library's expandable class's
	// volumes (its blockParameters' where it has them) on the node:
	// ControllerExpandVolume answers node_expansion_required true and the
	// kubelet calls NodeExpandVolume. Asked: a node that reports no
	// EXPAND_VOLUME (NodeGetCapabilities) never gets NodeExpandVolume. A
	// profile may declare it false: a node that reports EXPAND_VOLUME for
	// other volumes, whose class's volumes grow in ControllerExpandVolume
	// alone (csisim-file's directories). A driver that needs a flag to
	// grow volumes on the node has it in flags.extra.nodeExpansion.
	NodeExpansion Capability = "nodeExpansion"
	// Topology: VOLUME_ACCESSIBILITY_CONSTRAINTS. Asked.
	Topology Capability = "topology"
	// Zones: the driver can be told each node's zone (flags.zone) and
	// reports it under its topology key. Declared. A scenario's
	// cluster.zones alone only labels the nodes; one whose volumes must
	// follow the zones needs it.
	Zones Capability = "zones"
	// Capacity: GET_CAPACITY, for storage capacity tracking (flags.capacity
	// sets the capacity). Asked.
	Capacity Capability = "capacity"
	// VolumeLimits: NodeGetInfo's max_volumes_per_node, which
	// flags.volumeLimit sets. Declared.
	VolumeLimits Capability = "volumeLimits"
	// Ephemeral: CSI inline ephemeral volumes: the CSIDriver's
	// volumeLifecycleModes has Ephemeral (csiDriver.volumeLifecycleModes).
	Ephemeral Capability = "ephemeral"
	// MultiNode: the MULTI_NODE_* access modes (ReadWriteMany,
	// ReadOnlyMany). Declared (or flags.multiNode).
	MultiNode Capability = "multiNode"
	// SingleNodeMultiWriter: the SINGLE_NODE_MULTI_WRITER controller
	// capability, with which the sidecars ask for SINGLE_NODE_SINGLE_WRITER
	// for ReadWriteOncePod. Asked.
	SingleNodeMultiWriter Capability = "singleNodeMultiWriter"
	// FSGroup: a pod's fsGroup is applied: the node's VOLUME_MOUNT_GROUP
	// (asked), or the CSIDriver's fsGroupPolicy File (declared).
	FSGroup Capability = "fsGroup"
	// PodInfo: the driver wants the pod's information on NodePublishVolume:
	// the CSIDriver's podInfoOnMount (csiDriver.podInfoOnMount).
	PodInfo Capability = "podInfo"
	// StageUnstage: STAGE_UNSTAGE_VOLUME (NodeStageVolume before publish).
	// Asked, of a node plugin.
	StageUnstage Capability = "stageUnstage"
	// RealMounts: the driver mounts for real, so the built-in workload can
	// write and read back data (not the in-memory mocks). Declared.
	RealMounts Capability = "realMounts"
	// SharedState: every plugin process of a run sees the same volumes, so a
	// volume made by the controller plugin can be used on any node.
	// Declared.
	SharedState Capability = "sharedState"
	// StateDir: the driver keeps its volume records under {stateDir}, so
	// that a plugin restarted with state: keep finds them, and one
	// restarted with state: lose (its directory emptied) does not.
	// Declared.
	StateDir Capability = "stateDir"
	// ControllerOnlyExpansion: ControllerExpandVolume of a volume of the
	// library's class answers node_expansion_required false, so that a
	// claim grows without a pod (a file share's, a directory's). Declared.
	ControllerOnlyExpansion Capability = "controllerOnlyExpansion"
	// SurvivesRestart: a plugin process that crashes or is restarted with
	// state: keep finds the volumes it knew (in {stateDir}, or in the
	// memory of csisim's in-process mock), so a crash does not lose them.
	// Declared.
	SurvivesRestart Capability = "survivesRestart"
	// CSISimErrors: the driver refuses in the words of csisim's own driver;
	// scenarios that compare a driver's error message word for word, as the
	// real sidecars copy it into events and VolumeAttachments, need it.
	// Declared.
	CSISimErrors Capability = "csisimErrors"
	// ModifyVolume: MODIFY_VOLUME, ControllerModifyVolume of a claim's new
	// VolumeAttributesClass, and mutable_parameters at CreateVolume. Asked,
	// as the external-resizer and external-provisioner decide.
	ModifyVolume Capability = "modifyVolume"
	// ChangingVolumeLimits: a node's volume limit can be changed in the
	// driver's storage backend while it runs (the nodeVolumeLimit step),
	// and NodeGetInfo then reports the new one. Declared: csisim changes it
	// in its own driver's backend.
	ChangingVolumeLimits Capability = "changingVolumeLimits"
	// GroupSnapshots: volume group snapshots, GROUP_CONTROLLER_SERVICE
	// and CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT. Asked, as the
	// csi-snapshotter does at start (GroupControllerGetCapabilities).
	GroupSnapshots Capability = "groupSnapshots"
	// VolumeHealth: GET_VOLUME_HEALTH, ControllerGetVolumeHealth (CSI
	// v1.13), with which the external-health-monitor asks the driver how
	// its volumes are. Asked, as the sidecar decides at start.
	VolumeHealth Capability = "volumeHealth"
	// ChangingVolumeHealth: a volume's health can be changed in the
	// driver's storage backend while it runs (the volumeHealth step), and
	// the driver's health calls then report it. Declared: csisim changes
	// it in its own driver's backend.
	ChangingVolumeHealth Capability = "changingVolumeHealth"
)

// Capabilities lists every capability in the order a report prints them.
var Capabilities = []Capability{Attach, Block, Snapshots, ListSnapshots, Clones, ExpansionOnline, ExpansionOffline,
	NodeExpansion, Topology, Zones, Capacity, VolumeLimits, Ephemeral, MultiNode, SingleNodeMultiWriter, FSGroup,
	PodInfo, StageUnstage, RealMounts, SharedState, StateDir, SurvivesRestart, ControllerOnlyExpansion, CSISimErrors, ModifyVolume,
	ChangingVolumeLimits, GroupSnapshots, VolumeHealth, ChangingVolumeHealth}

// answer is how a running driver answers for an asked capability: whether
// it has it, and in what words it says so, for messages.
type answer struct {
	has func(driverinfo.Info) bool
	// says is what the driver reports when it has it, or the part of it
	// the driver does not report.
	says func(driverinfo.Info) string
}

// saying is an answer's words that do not depend on the driver.
func saying(words string) func(driverinfo.Info) string {
	return func(driverinfo.Info) string { return words }
}

// asked are the capabilities the running driver says of itself, as the
// sidecars and the kubelet ask it (drivers/driverinfo).
var asked = map[Capability]answer{
	Attach: {func(i driverinfo.Info) bool { return i.CanAttach() }, func(i driverinfo.Info) string {
		if !i.HasControllerService() {
			return "CONTROLLER_SERVICE (GetPluginCapabilities)"
		}
		return "PUBLISH_UNPUBLISH_VOLUME (ControllerGetCapabilities)"
	}},
	Snapshots:             controllerAnswer(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT),
	ListSnapshots:         controllerAnswer(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS),
	Clones:                controllerAnswer(csi.ControllerServiceCapability_RPC_CLONE_VOLUME),
	Capacity:              controllerAnswer(csi.ControllerServiceCapability_RPC_GET_CAPACITY),
	SingleNodeMultiWriter: controllerAnswer(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER),
	ModifyVolume:          controllerAnswer(csi.ControllerServiceCapability_RPC_MODIFY_VOLUME),
	GroupSnapshots: {func(i driverinfo.Info) bool {
		return i.Group[csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT]
	}, func(i driverinfo.Info) string {
		if !i.Plugin[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE] {
			return "GROUP_CONTROLLER_SERVICE (GetPluginCapabilities)"
		}
		return "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT (GroupControllerGetCapabilities)"
	}},
	VolumeHealth: controllerAnswer(csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH),
	Topology: {func(i driverinfo.Info) bool {
		return i.Plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS]
	}, saying("VOLUME_ACCESSIBILITY_CONSTRAINTS (GetPluginCapabilities)")},
	StageUnstage: {func(i driverinfo.Info) bool { return i.Node[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] },
		saying("STAGE_UNSTAGE_VOLUME (NodeGetCapabilities)")},
	NodeExpansion: {func(i driverinfo.Info) bool { return i.Node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME] },
		saying("EXPAND_VOLUME (NodeGetCapabilities)")},
}

// mayDeclareFalse are the asked capabilities a profile may still declare
// false although the driver reports them, and then the profile decides:
// NodeExpansion, for a node that grows other volumes than the library's
// class's (csisim-file's directories grow in ControllerExpandVolume
// alone). Declared true, the driver's answer still decides.
var mayDeclareFalse = map[Capability]bool{NodeExpansion: true}

// askedOf is how the running driver's answer decides c: not at all (ok
// false) when csisim does not ask it, or when the profile declares false
// a capability it may (mayDeclareFalse).
func (p *Profile) askedOf(c Capability) (answer, bool) {
	a, ok := asked[c]
	if !ok {
		return answer{}, false
	}
	if declared, set := p.Capabilities[c]; mayDeclareFalse[c] && set && !declared {
		return answer{}, false
	}
	return a, true
}

func controllerAnswer(rpc csi.ControllerServiceCapability_RPC_Type) answer {
	return answer{func(i driverinfo.Info) bool { return i.Controller[rpc] }, saying(rpc.String() + " (ControllerGetCapabilities)")}
}

// Asked lists the capabilities a profile need not declare: csisim asks the
// running driver (GetPluginCapabilities, ControllerGetCapabilities,
// NodeGetCapabilities), as the sidecars and the kubelet do (some of them,
// such as NodeExpansion, a profile may still declare false).
func Asked() []Capability {
	var out []Capability
	for _, c := range Capabilities {
		if _, ok := asked[c]; ok {
			out = append(out, c)
		}
	}
	return out
}

// Has says whether the driver has capability c, as far as it is known: the
// driver's own answer once it was asked (Complete), else what the profile
// declares; false when neither says.
func (p *Profile) Has(c Capability) bool {
	has, _ := p.Known(c)
	return has
}

// Known is whether the driver has c, and whether that is known: an asked
// capability is unknown until the driver has answered, unless the profile
// declares it; any other is what the profile declares, false if it does
// not.
func (p *Profile) Known(c Capability) (has, known bool) {
	if a, ok := p.askedOf(c); ok && p.Reported != nil {
		return a.has(*p.Reported), true
	}
	switch c {
	case PodInfo:
		return p.Capabilities[c] || p.CSIDriver.PodInfoOnMount, true
	case Ephemeral:
		return p.Capabilities[c] || slices.Contains(p.CSIDriver.VolumeLifecycleModes, "Ephemeral"), true
	case FSGroup:
		if p.fsGroupPolicy() == "File" || p.Capabilities[c] {
			return true, true
		}
		if p.Reported != nil {
			return p.Reported.Node[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP], true
		}
		declared, ok := p.Capabilities[c]
		return declared, ok
	}
	declared, ok := p.Capabilities[c]
	_, isAsked := asked[c]
	return declared, ok || !isAsked
}

// Missing returns the capabilities of needs the driver lacks, in order. A
// capability the driver is still to be asked for is not missing yet: a run
// decides once it has asked.
func (p *Profile) Missing(needs []Capability) []Capability {
	var out []Capability
	for _, c := range needs {
		if has, known := p.Known(c); known && !has {
			out = append(out, c)
		}
	}
	return out
}

// Unreported says, for an asked capability the running driver lacks,
// what it did not report, e.g. "STAGE_UNSTAGE_VOLUME
// (NodeGetCapabilities)"; "" when the profile, not the driver, says it
// (a capability csisim does not ask, or a driver not asked yet).
func (p *Profile) Unreported(c Capability) string {
	a, ok := p.askedOf(c)
	if !ok || p.Reported == nil || a.has(*p.Reported) {
		return ""
	}
	return a.says(*p.Reported)
}

// Reports says, for an asked capability the running driver has, what it
// reports, e.g. "STAGE_UNSTAGE_VOLUME (NodeGetCapabilities)"; "" when the
// profile, not the driver, says it.
func (p *Profile) Reports(c Capability) string {
	a, ok := p.askedOf(c)
	if !ok || p.Reported == nil || !a.has(*p.Reported) {
		return ""
	}
	return a.says(*p.Reported)
}

// Complete returns a copy of the profile with the answers of its running
// driver: the asked capabilities are the driver's (Has, Missing), its name
// is the one it answered GetPluginInfo with, and, if the profile names no
// topology keys, they are the keys of the node's NodeGetInfo topology.
func (p *Profile) Complete(info driverinfo.Info) *Profile {
	out := *p
	out.Capabilities = maps.Clone(p.Capabilities)
	out.Reported = &info
	out.Name = info.Name
	if len(out.TopologyKeys) == 0 && info.NodeInfo != nil && out.Has(Topology) {
		out.TopologyKeys = slices.Sorted(maps.Keys(info.NodeInfo.Topology))
	}
	return &out
}

// Contradictions are what the profile declares that its running driver's
// answers contradict, each naming the profile's field and both values: an
// asked capability declared otherwise than the driver reports, expansion
// declared for a driver that reports no EXPAND_VOLUME, nodeExpansion for
// one whose node reports none, fsGroup for one
// with neither VOLUME_MOUNT_GROUP nor fsGroupPolicy File. Block cannot be
// asked (CSI has no capability for it) and is not checked.
func (p *Profile) Contradictions(info driverinfo.Info) []string {
	var out []string
	for _, c := range Capabilities {
		declared, ok := p.Capabilities[c]
		if !ok {
			continue
		}
		if a, isAsked := asked[c]; isAsked && (declared || !mayDeclareFalse[c]) {
			if has := a.has(info); has != declared {
				out = append(out, contradiction(c, declared, has, info.Name, a.says(info)))
			}
		}
	}
	expands := info.Controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME] || info.Node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME]
	for _, c := range []Capability{ExpansionOnline, ExpansionOffline} {
		if p.Capabilities[c] && !expands {
			out = append(out, contradiction(c, true, false, info.Name, "EXPAND_VOLUME (ControllerGetCapabilities or NodeGetCapabilities)"))
		}
	}
	if p.Capabilities[ExpansionOnline] && info.Expansion == csi.PluginCapability_VolumeExpansion_OFFLINE {
		out = append(out, fmt.Sprintf("capabilities.%s: the profile says true, but %s reports VolumeExpansion OFFLINE (GetPluginCapabilities): "+
			"it expands only volumes no pod uses", ExpansionOnline, info.Name))
	}
	if p.Capabilities[FSGroup] && p.fsGroupPolicy() != "File" && !info.Node[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP] {
		out = append(out, fmt.Sprintf("capabilities.%s: the profile says true, but %s does not report VOLUME_MOUNT_GROUP (NodeGetCapabilities) "+
			"and csiDriver.fsGroupPolicy is %s, not File", FSGroup, info.Name, p.fsGroupPolicyOrDefault()))
	}
	return out
}

// contradiction says that capability c is declared one way and answered
// the other.
func contradiction(c Capability, declared, has bool, driver, says string) string {
	if has {
		return fmt.Sprintf("capabilities.%s: the profile says %v, but %s reports %s: leave the key out, the driver is asked",
			c, declared, driver, says)
	}
	return fmt.Sprintf("capabilities.%s: the profile says %v, but %s does not report %s", c, declared, driver, says)
}

// capabilityList names every capability, for messages.
func capabilityList() string {
	names := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}
