package driverinfo

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// BlockTrial is the raw block volume TryBlock asks a driver to make.
type BlockTrial struct {
	// Parameters are the class's parameters for block volumes; those
	// with the prefix csi.storage.k8s.io/ are the external-provisioner's
	// own and are not passed to the driver, as it does not pass them.
	Parameters map[string]string
	// Topology, if not empty, is the node's NodeGetInfo topology, asked
	// for as the external-provisioner asks for a pod's node.
	Topology map[string]string
}

// blockTrialName is the name of the volume TryBlock makes; blockTrialSize
// its size, csi-sanity's as csisim runs it (drivers/sanityrun).
const (
	blockTrialName       = "csisim-block-check"
	blockTrialSize int64 = 64 << 20
)

// reservedPrefix is the external-provisioner's prefix of the parameters
// it takes for itself (controller.go, csiParameterPrefix).
const reservedPrefix = "csi.storage.k8s.io/"

// TryBlock asks the controller service to make a raw block volume and
// deletes it again. CSI has no capability for raw block volumes: a
// driver says whether it makes them only by answering a CreateVolume
// with a block access type, so this is the one question about block that
// can be asked. The error says what CreateVolume (or DeleteVolume, if the
// volume could not be deleted) answered.
func TryBlock(ctx context.Context, c csi.ControllerClient, t BlockTrial) error {
	req := &csi.CreateVolumeRequest{
		Name:          blockTrialName,
		CapacityRange: &csi.CapacityRange{RequiredBytes: blockTrialSize},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
		Parameters: driverParameters(t.Parameters),
	}
	if len(t.Topology) > 0 {
		top := []*csi.Topology{{Segments: maps.Clone(t.Topology)}}
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: top, Preferred: top}
	}
	resp, err := c.CreateVolume(ctx, req)
	if err != nil {
		return fmt.Errorf("CreateVolume of a raw block volume (%s, SINGLE_NODE_WRITER, %d bytes) answered: %w", blockTrialName, blockTrialSize, err)
	}
	id := resp.GetVolume().GetVolumeId()
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		return fmt.Errorf("DeleteVolume of the raw block volume %s it made (%s) answered: %w", blockTrialName, id, err)
	}
	return nil
}

// NeedsSecrets says whether a class with these parameters names the
// secret the external-provisioner gives CreateVolume (its
// provisioner-secret-name, or secret-name for every call), which TryBlock
// cannot give.
func NeedsSecrets(parameters map[string]string) bool {
	_, provisioner := parameters[reservedPrefix+"provisioner-secret-name"]
	_, every := parameters[reservedPrefix+"secret-name"]
	return provisioner || every
}

// driverParameters are the parameters without the external-provisioner's
// own.
func driverParameters(parameters map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range parameters {
		if !strings.HasPrefix(k, reservedPrefix) {
			out[k] = v
		}
	}
	return out
}
