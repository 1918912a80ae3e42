// Package driverinfo asks a running CSI driver what it says of itself, as
// the sidecars and the kubelet ask it: its name (GetPluginInfo), its
// plugin, controller and node capabilities, and a node plugin's
// NodeGetInfo. The answers decide what the simulated components do (the
// external-attacher's trivial handler for a driver without
// PUBLISH_UNPUBLISH_VOLUME...) and which scenarios a driver can run, so
// that a driver profile need not declare them (drivers/profile).
package driverinfo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Capabilities are what a driver reports it can do.
type Capabilities struct {
	// Plugin are the services of GetPluginCapabilities
	// (CONTROLLER_SERVICE, VOLUME_ACCESSIBILITY_CONSTRAINTS...).
	Plugin map[csi.PluginCapability_Service_Type]bool
	// Expansion is GetPluginCapabilities' VolumeExpansion, UNKNOWN when
	// it reports none.
	Expansion csi.PluginCapability_VolumeExpansion_Type
	// Controller are ControllerGetCapabilities' RPCs; nil when they were
	// not asked (a driver without CONTROLLER_SERVICE is not asked).
	Controller map[csi.ControllerServiceCapability_RPC_Type]bool
	// Group are GroupControllerGetCapabilities' RPCs; nil when they were
	// not asked (a driver without GROUP_CONTROLLER_SERVICE is not asked).
	Group map[csi.GroupControllerServiceCapability_RPC_Type]bool
	// Node are NodeGetCapabilities' RPCs; nil when they were not asked.
	Node map[csi.NodeServiceCapability_RPC_Type]bool
}

// NodeInfo is a node plugin's answer to NodeGetInfo.
type NodeInfo struct {
	ID string
	// Topology is accessible_topology's segments; nil for none.
	Topology map[string]string
	// MaxVolumes is max_volumes_per_node, 0 for no limit.
	MaxVolumes int64
}

// Info is everything a driver says of itself at start.
type Info struct {
	// Name and VendorVersion are GetPluginInfo's.
	Name, VendorVersion string
	Capabilities
	// NodeInfo is a node plugin's NodeGetInfo; nil when no node plugin
	// was asked.
	NodeInfo *NodeInfo
}

// Asked says whether the driver was asked at all: Info's zero value is a
// driver nobody asked.
func (i Info) Asked() bool { return i.Name != "" }

// HasControllerService says whether the plugin reports CONTROLLER_SERVICE,
// without which no sidecar calls the controller service.
func (c Capabilities) HasControllerService() bool {
	return c.Plugin[csi.PluginCapability_Service_CONTROLLER_SERVICE]
}

// CanAttach says whether the driver has ControllerPublishVolume as the
// external-attacher decides it at start: CONTROLLER_SERVICE and
// PUBLISH_UNPUBLISH_VOLUME (cmd/csi-attacher/main.go); without them it
// uses its trivial handler.
func (c Capabilities) CanAttach() bool {
	return c.HasControllerService() && c.Controller[csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME]
}

// AskPlugin asks GetPluginCapabilities.
func AskPlugin(ctx context.Context, id csi.IdentityClient) (map[csi.PluginCapability_Service_Type]bool, csi.PluginCapability_VolumeExpansion_Type, error) {
	resp, err := id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return nil, 0, fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	services := map[csi.PluginCapability_Service_Type]bool{}
	expansion := csi.PluginCapability_VolumeExpansion_UNKNOWN
	for _, c := range resp.GetCapabilities() {
		if s := c.GetService(); s != nil {
			services[s.GetType()] = true
		}
		if e := c.GetVolumeExpansion(); e != nil {
			expansion = e.GetType()
		}
	}
	return services, expansion, nil
}

// AskController asks ControllerGetCapabilities.
func AskController(ctx context.Context, c csi.ControllerClient) (map[csi.ControllerServiceCapability_RPC_Type]bool, error) {
	resp, err := c.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("ControllerGetCapabilities: %w", err)
	}
	caps := map[csi.ControllerServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		if rpc := c.GetRpc(); rpc != nil {
			caps[rpc.GetType()] = true
		}
	}
	return caps, nil
}

// AskGroupController asks GroupControllerGetCapabilities, as the
// csi-snapshotter does at start (cmd/csi-snapshotter/main.go,
// supportsGroupControllerCreateVolumeGroupSnapshot).
func AskGroupController(ctx context.Context, c csi.GroupControllerClient) (map[csi.GroupControllerServiceCapability_RPC_Type]bool, error) {
	resp, err := c.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("GroupControllerGetCapabilities: %w", err)
	}
	caps := map[csi.GroupControllerServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		if rpc := c.GetRpc(); rpc != nil {
			caps[rpc.GetType()] = true
		}
	}
	return caps, nil
}

// AskNode asks NodeGetCapabilities.
func AskNode(ctx context.Context, n csi.NodeClient) (map[csi.NodeServiceCapability_RPC_Type]bool, error) {
	resp, err := n.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	caps := map[csi.NodeServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		if rpc := c.GetRpc(); rpc != nil {
			caps[rpc.GetType()] = true
		}
	}
	return caps, nil
}

// AskNodeInfo asks NodeGetInfo.
func AskNodeInfo(ctx context.Context, n csi.NodeClient) (*NodeInfo, error) {
	resp, err := n.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("NodeGetInfo: %w", err)
	}
	info := &NodeInfo{ID: resp.GetNodeId(), MaxVolumes: resp.GetMaxVolumesPerNode()}
	if segs := resp.GetAccessibleTopology().GetSegments(); len(segs) > 0 {
		info.Topology = maps.Clone(segs)
	}
	return info, nil
}

// Plugin is a plugin's services, as AskController and AskNode reach them.
type Plugin struct {
	Identity   csi.IdentityClient
	Controller csi.ControllerClient
	// GroupController is asked only if the plugin reports
	// GROUP_CONTROLLER_SERVICE; it may be nil otherwise.
	GroupController csi.GroupControllerClient
	Node            csi.NodeClient
}

// Ask asks the controller plugin its name and capabilities and, if node
// is not nil, a node plugin its capabilities and NodeGetInfo, in the order
// the components ask them: GetPluginInfo, GetPluginCapabilities,
// ControllerGetCapabilities (only with CONTROLLER_SERVICE, as the
// external-attacher asks), GroupControllerGetCapabilities (only with
// GROUP_CONTROLLER_SERVICE), NodeGetCapabilities, NodeGetInfo.
func Ask(ctx context.Context, controller Plugin, node *Plugin) (Info, error) {
	var info Info
	resp, err := controller.Identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return info, fmt.Errorf("controller plugin: GetPluginInfo: %w", err)
	}
	if resp.GetName() == "" {
		return info, fmt.Errorf("controller plugin: GetPluginInfo answered an empty name")
	}
	info.Name, info.VendorVersion = resp.GetName(), resp.GetVendorVersion()
	if info.Plugin, info.Expansion, err = AskPlugin(ctx, controller.Identity); err != nil {
		return info, fmt.Errorf("controller plugin: %w", err)
	}
	if info.HasControllerService() {
		if info.Controller, err = AskController(ctx, controller.Controller); err != nil {
			return info, fmt.Errorf("controller plugin: %w", err)
		}
	}
	if info.Plugin[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE] && controller.GroupController != nil {
		if info.Group, err = AskGroupController(ctx, controller.GroupController); err != nil {
			return info, fmt.Errorf("controller plugin: %w", err)
		}
	}
	if node == nil {
		return info, nil
	}
	if info.Node, err = AskNode(ctx, node.Node); err != nil {
		return info, fmt.Errorf("node plugin: %w", err)
	}
	if info.NodeInfo, err = AskNodeInfo(ctx, node.Node); err != nil {
		return info, fmt.Errorf("node plugin: %w", err)
	}
	return info, nil
}

// String says what the driver reported, for reports: its name and each
// set of capabilities, sorted.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", i.Name)
	if i.VendorVersion != "" {
		fmt.Fprintf(&b, " %s", i.VendorVersion)
	}
	fmt.Fprintf(&b, "; plugin: %s", names(i.Plugin))
	if i.Expansion != csi.PluginCapability_VolumeExpansion_UNKNOWN {
		fmt.Fprintf(&b, ", VolumeExpansion %s", i.Expansion)
	}
	if i.Controller != nil {
		fmt.Fprintf(&b, "; controller: %s", names(i.Controller))
	}
	if i.Group != nil {
		fmt.Fprintf(&b, "; group controller: %s", names(i.Group))
	}
	if i.Node != nil {
		fmt.Fprintf(&b, "; node: %s", names(i.Node))
	}
	if n := i.NodeInfo; n != nil {
		fmt.Fprintf(&b, "; NodeGetInfo: node_id %s", n.ID)
		if len(n.Topology) > 0 {
			var segs []string
			for _, k := range slices.Sorted(maps.Keys(n.Topology)) {
				segs = append(segs, k+"="+n.Topology[k])
			}
			fmt.Fprintf(&b, ", topology %s", strings.Join(segs, ","))
		}
		if n.MaxVolumes > 0 {
			fmt.Fprintf(&b, ", max_volumes_per_node %d", n.MaxVolumes)
		}
	}
	return b.String()
}

// names lists the names of a set of capabilities, sorted; "none" for
// none.
func names[K interface {
	comparable
	fmt.Stringer
}](set map[K]bool) string {
	var out []string
	for k, ok := range set {
		if ok {
			out = append(out, k.String())
		}
	}
	if len(out) == 0 {
		return "none"
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
