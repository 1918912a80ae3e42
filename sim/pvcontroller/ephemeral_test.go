package pvcontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A generic ephemeral volume's claim is in use by its pod only if the
// pod owns it, as the pvc-protection controller's podUsesPVC says.
func TestUsesClaimEphemeral(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "pod-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		}}}
	isTrue := true
	claim := func(name string, owner string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if owner != "" {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: "pod-uid", Controller: &isTrue}}
			if owner != "pod-uid" {
				c.OwnerReferences[0].UID = "other"
			}
		}
		return c
	}
	for _, tc := range []struct {
		claim *corev1.PersistentVolumeClaim
		want  bool
	}{
		{claim("data", ""), true},
		{claim("app-scratch", "pod-uid"), true},
		{claim("app-scratch", ""), false},
		{claim("app-scratch", "other"), false},
		{claim("scratch", "pod-uid"), false},
	} {
		if got := usesClaim(pod, tc.claim); got != tc.want {
			t.Errorf("usesClaim(%s, owners %v) = %t, want %t", tc.claim.Name, tc.claim.OwnerReferences, got, tc.want)
		}
	}
}
