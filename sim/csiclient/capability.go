package csiclient

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
)

// AccessMode is the CSI access mode for a Kubernetes one, as the sidecars
// and the kubelet translate it.
func AccessMode(m corev1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	switch m {
	case corev1.ReadWriteOnce:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	}
	return csi.VolumeCapability_AccessMode_UNKNOWN
}

// Capability is the volume capability for one access mode, a volume mode,
// a filesystem type and mount flags.
func Capability(mode corev1.PersistentVolumeAccessMode, volumeMode *corev1.PersistentVolumeMode, fsType string, mountFlags []string) *csi.VolumeCapability {
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: AccessMode(mode)}}
	if volumeMode != nil && *volumeMode == corev1.PersistentVolumeBlock {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType, MountFlags: mountFlags}}
	}
	return c
}

// CapabilityOf is the capability a CSI PersistentVolume is used with: its
// first access mode (ReadWriteOnce if none).
func CapabilityOf(pv *corev1.PersistentVolume) *csi.VolumeCapability {
	mode := corev1.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	fsType := ""
	if pv.Spec.CSI != nil {
		fsType = pv.Spec.CSI.FSType
	}
	return Capability(mode, pv.Spec.VolumeMode, fsType, pv.Spec.MountOptions)
}
