package volumeutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// ClaimName is the claim a pod volume stands for: a persistentVolumeClaim
// volume's claimName, or a generic ephemeral volume's <pod>-<volume>
// (ephemeral.VolumeClaimName); ok is false for a volume with no claim.
func ClaimName(pod *corev1.Pod, v *corev1.Volume) (name string, ok bool) {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName, true
	case v.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, v), true
	}
	return "", false
}
