package pvcontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pvOf(name, class, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class, AccessModes: modes,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
}

func claimOf(class, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "uid-1"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
}

func TestBestMatch(t *testing.T) {
	rwo, rwx := corev1.ReadWriteOnce, corev1.ReadWriteMany
	block := corev1.PersistentVolumeBlock
	labelled := pvOf("labelled", "slow", "5Gi", rwo)
	labelled.Labels = map[string]string{"tier": "gold"}
	preBound := pvOf("prebound", "other", "1Mi", rwx)
	preBound.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data"}
	taken := pvOf("taken", "slow", "1Gi", rwo)
	taken.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "other", UID: "uid-2"}
	blockPV := pvOf("block", "slow", "1Gi", rwo)
	blockPV.Spec.VolumeMode = &block
	released := pvOf("released", "slow", "1Gi", rwo)
	released.Status.Phase = corev1.VolumeReleased
	withSelector := claimOf("slow", "1Gi", rwo)
	withSelector.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}

	for _, tc := range []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		want    string
	}{
		{"smallest that fits", claimOf("slow", "2Gi", rwo),
			[]*corev1.PersistentVolume{pvOf("big", "slow", "10Gi", rwo), pvOf("small", "slow", "1Gi", rwo), pvOf("fits", "slow", "3Gi", rwo)}, "fits"},
		{"class must match", claimOf("fast", "1Gi", rwo), []*corev1.PersistentVolume{pvOf("slow", "slow", "1Gi", rwo)}, ""},
		{"every access mode", claimOf("slow", "1Gi", rwx), []*corev1.PersistentVolume{pvOf("rwo", "slow", "1Gi", rwo)}, ""},
		{"volume mode", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{blockPV}, ""},
		{"selector", withSelector, []*corev1.PersistentVolume{pvOf("plain", "slow", "1Gi", rwo), labelled}, "labelled"},
		{"pre-bound wins over everything", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{pvOf("fits", "slow", "1Gi", rwo), preBound}, "prebound"},
		{"not someone else's", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{taken}, ""},
		{"not released", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{released}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bestMatch(tc.claim, tc.volumes)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Errorf("bestMatch = %q, want %q", name, tc.want)
			}
		})
	}
}
