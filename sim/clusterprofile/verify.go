package clusterprofile

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csisim/csisim/drivers/profile"
)

// Reported are the capabilities a running driver reports for itself,
// those a profile declares that the CSI capability calls can show:
// GetPluginCapabilities, ControllerGetCapabilities and
// NodeGetCapabilities. The others (zones, realMounts, sharedState...)
// only a run shows.
func Reported(ctx context.Context, identity csi.IdentityClient, controller csi.ControllerClient, node csi.NodeClient) (map[profile.Capability]bool, error) {
	out := map[profile.Capability]bool{}
	plugin, err := identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	for _, c := range plugin.GetCapabilities() {
		switch {
		case c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS:
			out[profile.Topology] = true
		case c.GetVolumeExpansion().GetType() == csi.PluginCapability_VolumeExpansion_ONLINE:
			out[profile.ExpansionOnline] = true
		}
	}
	ctrl, err := controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("ControllerGetCapabilities: %w", err)
	}
	for _, c := range ctrl.GetCapabilities() {
		switch c.GetRpc().GetType() {
		case csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME:
			out[profile.Attach] = true
		case csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT:
			out[profile.Snapshots] = true
		case csi.ControllerServiceCapability_RPC_CLONE_VOLUME:
			out[profile.Clones] = true
		case csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			out[profile.SingleNodeMultiWriter] = true
		}
	}
	nodeCaps, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	for _, c := range nodeCaps.GetCapabilities() {
		switch c.GetRpc().GetType() {
		case csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			out[profile.StageUnstage] = true
		case csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			out[profile.FSGroup] = true
		}
	}
	return out, nil
}

// Mismatches compares what a profile declares with what its driver
// reports (Reported), for the capabilities the driver can report: a
// profile that claims more than the driver reports makes scenarios fail
// instead of being skipped; one that claims less skips them for nothing.
// fsGroup is only checked one way: a driver may apply fsGroup through
// CSIDriver fsGroupPolicy File without VOLUME_MOUNT_GROUP.
func Mismatches(p *profile.Profile, reported map[profile.Capability]bool) []string {
	var out []string
	for _, c := range []profile.Capability{profile.Attach, profile.Snapshots, profile.Clones, profile.ExpansionOnline,
		profile.Topology, profile.StageUnstage, profile.SingleNodeMultiWriter, profile.FSGroup} {
		declared, has := p.Has(c), reported[c]
		switch {
		case declared && !has && c != profile.FSGroup:
			out = append(out, fmt.Sprintf("capabilities.%s is true, but the driver does not report it", c))
		case !declared && has:
			out = append(out, fmt.Sprintf("capabilities.%s is not set, but the driver reports it", c))
		}
	}
	return out
}
