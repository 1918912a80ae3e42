package hostpath

// What a volume capability may ask of this plugin: access types, file
// systems and access modes.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/csiutil"
)

// supportedFsTypes are the file systems a block volume can be formatted
// with ("" means ext4). Directory volumes have no file system of their own
// and ignore the fs_type, as a CO may pass a default one for any volume.
var supportedFsTypes = []string{"", "ext2", "ext3", "ext4", "xfs"}

// checkCapability is checkVolumeCapability, and then the access mode
// against what the driver was started to support: the MULTI_NODE_* modes
// need --multi-node.
func (d *Driver) checkCapability(c *csi.VolumeCapability, kind volumeKind) error {
	if err := checkVolumeCapability(c, kind); err != nil {
		return err
	}
	return d.checkAccessMode(c.GetAccessMode().GetMode())
}

// checkAccessMode refuses a multi-node access mode unless the driver was
// started with --multi-node. A disk driver refuses such modes this way
// (InvalidArgument from CreateVolume and ControllerPublishVolume; the CSI
// spec's "Exceeds capabilities" from the node service), so that a
// ReadWriteMany claim of its class is never provisioned.
func (d *Driver) checkAccessMode(mode csi.VolumeCapability_AccessMode_Mode) error {
	if d.cfg.MultiNode || csiutil.IsSingleNode(mode) {
		return nil
	}
	return fmt.Errorf("access mode %s is not supported: volumes of this driver are used on one node at a time (csisim driver --multi-node supports the MULTI_NODE modes)", mode)
}

// checkVolumeCapability accepts mount access with any known access mode,
// and block access for block volumes. kind "" checks only what does not
// depend on the volume, for calls that must validate before looking it up.
func checkVolumeCapability(c *csi.VolumeCapability, kind volumeKind) error {
	if c == nil {
		return errors.New("volume capability is required")
	}
	switch {
	case c.GetBlock() != nil:
		if kind == kindDirectory {
			return fmt.Errorf("block access needs a volume of kind %s (parameter %s=%s); this volume is a directory", kindBlock, ParameterKind, kindBlock)
		}
	case c.GetMount() != nil:
		if fs := c.GetMount().GetFsType(); kind == kindBlock && !slices.Contains(supportedFsTypes, fs) {
			return fmt.Errorf("fs_type %q is not supported (supported: ext2, ext3, ext4, xfs)", fs)
		}
	default:
		return errors.New("volume capability must have access type mount or block")
	}
	mode := c.GetAccessMode().GetMode()
	if _, known := csi.VolumeCapability_AccessMode_Mode_name[int32(mode)]; !known || mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		return fmt.Errorf("access mode %v is not supported", mode)
	}
	return nil
}

// isReadOnly reports whether an access mode forbids writing.
func isReadOnly(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}
