package volumeutil

import (
	"crypto/sha256"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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

// InlineVolumeHandle is the volume handle the kubelet gives a pod's CSI
// inline ephemeral volume: csi-<sha256 of the pod UID followed by the
// volume's name> (kubernetes pkg/volume/csi/csi_mounter.go, makeVolumeHandle).
func InlineVolumeHandle(podUID types.UID, volumeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(podUID)+volumeName)))
}
