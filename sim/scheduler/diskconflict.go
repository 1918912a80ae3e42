package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// reasonDiskConflict is the VolumeRestrictions plugin's reason for a node
// where a pod already uses the same in-tree disk (v1.37.2
// pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go
// ErrReasonDiskConflict).
const reasonDiskConflict = "node(s) had no available disk"

// diskConflict is the VolumeRestrictions filter's volume conflict check
// (satisfyVolumeConflicts, isVolumeConflict): an inline GCE PD of the pod
// that a pod on the node also has, unless both mount it read-only; an
// inline AWS EBS volume of the same volume ID; an inline RBD image of the
// same pool and image on a shared monitor, unless both mount it read-only.
// The filter looks at the pod volumes as written, before any CSI
// migration or plugin lookup, so it holds for the inline volumes of the
// migrated plugins and of the removed rbd plugin alike. (Its iSCSI check
// concerns inline volumes csisim refuses at load, sim/unmodelled.)
func diskConflict(pod *corev1.Pod, running []*corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.GCEPersistentDisk == nil && v.AWSElasticBlockStore == nil && v.RBD == nil {
			continue
		}
		for _, other := range running {
			for j := range other.Spec.Volumes {
				if sameDisk(v, &other.Spec.Volumes[j]) {
					return true
				}
			}
		}
	}
	return false
}

func sameDisk(v, existing *corev1.Volume) bool {
	if pd, e := v.GCEPersistentDisk, existing.GCEPersistentDisk; pd != nil && e != nil &&
		pd.PDName == e.PDName && !(pd.ReadOnly && e.ReadOnly) {
		return true
	}
	if ebs, e := v.AWSElasticBlockStore, existing.AWSElasticBlockStore; ebs != nil && e != nil && ebs.VolumeID == e.VolumeID {
		return true
	}
	rbd, e := v.RBD, existing.RBD
	return rbd != nil && e != nil && rbd.RBDPool == e.RBDPool && rbd.RBDImage == e.RBDImage &&
		slices.ContainsFunc(rbd.CephMonitors, func(m string) bool { return slices.Contains(e.CephMonitors, m) }) &&
		!(rbd.ReadOnly && e.ReadOnly)
}
