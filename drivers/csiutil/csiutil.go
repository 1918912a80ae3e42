// Package csiutil holds what csisim's CSI drivers, and the fault proxy in
// front of them, read of a CSI request alike: whether a publish is of an
// inline ephemeral volume, whether a volume fits a capacity range, which
// access modes allow one node only, and which mutable parameters they
// accept.
package csiutil

import "github.com/container-storage-interface/spec/lib/go/csi"

// EphemeralContextKey is the volume context key by which the kubelet marks
// a NodePublishVolume of a CSI inline ephemeral volume ("true"; "false"
// for a persistent one), for drivers whose CSIDriver has podInfoOnMount
// (kubernetes pkg/volume/csi/csi_mounter.go). Such a volume is never
// created, attached nor staged.
const EphemeralContextKey = "csi.storage.k8s.io/ephemeral"

// IsEphemeral says whether a NodePublishVolume's volume context marks an
// inline ephemeral volume.
func IsEphemeral(volumeContext map[string]string) bool {
	return volumeContext[EphemeralContextKey] == "true"
}

// Fits reports whether a volume of capacity bytes satisfies a capacity
// range: at least its required bytes and, if it has a limit, at most
// that. A nil range is satisfied by any capacity.
func Fits(capacity int64, r *csi.CapacityRange) bool {
	return capacity >= r.GetRequiredBytes() && (r.GetLimitBytes() == 0 || capacity <= r.GetLimitBytes())
}

// IsSingleNode reports whether an access mode allows one node only.
func IsSingleNode(m csi.VolumeCapability_AccessMode_Mode) bool {
	switch m {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// ModeFromName turns an access mode's name (its String, as a driver keeps
// it in its state) back into the mode; an unknown name gives UNKNOWN.
func ModeFromName(name string) csi.VolumeCapability_AccessMode_Mode {
	return csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[name])
}
