package csiclient

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/accessmodes"
	corev1 "k8s.io/api/core/v1"
)

// Capability is the volume capability the sidecars ask for, for a set of
// Kubernetes access modes (the external-provisioner passes each of a
// claim's modes on its own, the external-attacher all of a volume's), a
// volume mode, a filesystem type and mount flags. The access modes map as
// csi-lib-utils maps them for both sidecars: with a driver that has the
// SINGLE_NODE_MULTI_WRITER controller capability, ReadWriteOnce is
// SINGLE_NODE_MULTI_WRITER and ReadWriteOncePod SINGLE_NODE_SINGLE_WRITER;
// without it both are SINGLE_NODE_WRITER. Combinations CSI cannot express
// (ReadOnlyMany with ReadWriteOnce) are an error.
func Capability(modes []corev1.PersistentVolumeAccessMode, volumeMode *corev1.PersistentVolumeMode, fsType string, mountFlags []string, singleNodeMultiWriter bool) (*csi.VolumeCapability, error) {
	mode, err := accessmodes.ToCSIAccessMode(modes, singleNodeMultiWriter)
	if err != nil {
		return nil, err
	}
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if volumeMode != nil && *volumeMode == corev1.PersistentVolumeBlock {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType, MountFlags: mountFlags}}
	}
	return c, nil
}

// CapabilityOf is the capability the external-attacher publishes a CSI
// PersistentVolume with: all its access modes, its volume mode, fsType and
// mount options.
func CapabilityOf(pv *corev1.PersistentVolume, singleNodeMultiWriter bool) (*csi.VolumeCapability, error) {
	fsType := ""
	if pv.Spec.CSI != nil {
		fsType = pv.Spec.CSI.FSType
	}
	return Capability(pv.Spec.AccessModes, pv.Spec.VolumeMode, fsType, pv.Spec.MountOptions, singleNodeMultiWriter)
}
