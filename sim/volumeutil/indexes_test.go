package volumeutil

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIndexFuncs(t *testing.T) {
	pv := "pv-1"
	for _, tc := range []struct {
		index string
		obj   any
		want  []string
	}{
		{PodsByClaim, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}}}, []string{"ns/data", "ns/app-scratch"}},
		{PodsByNode, &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-1"}}, []string{"node-1"}},
		{PodsByNode, &corev1.Pod{}, []string{""}},
		{AttachmentsByVolume, &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}, []string{"pv-1"}},
		{AttachmentsByVolume, &storagev1.VolumeAttachment{}, nil},
		{AttachmentsByNode, &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{NodeName: "node-2"}}, []string{"node-2"}},
		{VolumesByClaim, &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "data"}}}, []string{"ns/data"}},
		{VolumesByClaim, &corev1.PersistentVolume{}, []string{""}},
		{PodsByNode, &corev1.Node{}, nil},
	} {
		got, err := indexFuncs[tc.index](tc.obj)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s(%T) = %v, %v; want %v", tc.index, tc.obj, got, err, tc.want)
		}
	}
}
