package volumeutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestUsedByContainers(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{{Name: "seed"}}}},
		Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data"}},
			VolumeDevices: []corev1.VolumeDevice{{Name: "raw"}}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", VolumeMounts: []corev1.VolumeMount{{Name: "debug-vol"}}}}},
	}}
	for name, want := range map[string]bool{"data": true, "raw": true, "seed": true, "debug-vol": true, "unused": false} {
		if got := UsedByContainers(pod, name); got != want {
			t.Errorf("UsedByContainers(%q) = %v, want %v", name, got, want)
		}
	}
}
