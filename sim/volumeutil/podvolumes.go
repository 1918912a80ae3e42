// Package volumeutil holds rules about volumes that several components
// share, so that each applies them the same way.
package volumeutil

import corev1 "k8s.io/api/core/v1"

// UsedByContainers reports whether some container of pod — init, regular
// or ephemeral — mounts the volume named name or uses it as a block
// device. The kubelet sets up only such volumes: one the pod declares but
// no container uses is skipped ("Skipping unused volume", the volume
// manager's desired state of world populator, pkg/kubelet/volumemanager),
// though the attach/detach controller still attaches it.
func UsedByContainers(pod *corev1.Pod, name string) bool {
	uses := func(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice) bool {
		for _, m := range mounts {
			if m.Name == name {
				return true
			}
		}
		for _, d := range devices {
			if d.Name == name {
				return true
			}
		}
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		if uses(c.VolumeMounts, c.VolumeDevices) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if uses(c.VolumeMounts, c.VolumeDevices) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if uses(c.VolumeMounts, c.VolumeDevices) {
			return true
		}
	}
	return false
}
