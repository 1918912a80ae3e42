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
	preBound := pvOf("prebound", "other", "5Gi", rwo)
	preBound.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data"}
	preBound.Status.Phase = corev1.VolumePending
	preBoundRWX := pvOf("prebound-rwx", "slow", "5Gi", rwx)
	preBoundRWX.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data"}
	preBoundSmall := pvOf("prebound-small", "slow", "1Mi", rwo)
	preBoundSmall.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data"}
	otherUID := pvOf("other-uid", "slow", "1Gi", rwo)
	otherUID.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "uid-old"}
	deleting := pvOf("deleting", "slow", "1Gi", rwo)
	deleting.DeletionTimestamp = &metav1.Time{}
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
		delayed bool
		want    string
	}{
		{"smallest that fits", claimOf("slow", "2Gi", rwo),
			[]*corev1.PersistentVolume{pvOf("big", "slow", "10Gi", rwo), pvOf("small", "slow", "1Gi", rwo), pvOf("fits", "slow", "3Gi", rwo)}, false, "fits"},
		{"class must match", claimOf("fast", "1Gi", rwo), []*corev1.PersistentVolume{pvOf("slow", "slow", "1Gi", rwo)}, false, ""},
		{"every access mode", claimOf("slow", "1Gi", rwx), []*corev1.PersistentVolume{pvOf("rwo", "slow", "1Gi", rwo)}, false, ""},
		{"volume mode", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{blockPV}, false, ""},
		{"selector", withSelector, []*corev1.PersistentVolume{pvOf("plain", "slow", "1Gi", rwo), labelled}, false, "labelled"},
		{"pre-bound wins in its group, whatever its class and phase", claimOf("slow", "1Gi", rwo),
			[]*corev1.PersistentVolume{pvOf("fits", "slow", "1Gi", rwo), preBound}, false, "prebound"},
		{"fewer access modes beat a pre-bound volume with more", claimOf("slow", "1Gi", rwo),
			[]*corev1.PersistentVolume{preBoundRWX, pvOf("fits", "slow", "1Gi", rwo)}, false, "fits"},
		{"fewer access modes beat a smaller volume with more", claimOf("slow", "1Gi", rwo),
			[]*corev1.PersistentVolume{pvOf("both", "slow", "1Gi", rwo, rwx), pvOf("big", "slow", "10Gi", rwo)}, false, "big"},
		{"more access modes when nothing else fits", claimOf("slow", "1Gi", rwo),
			[]*corev1.PersistentVolume{pvOf("both", "slow", "1Gi", rwo, rwx)}, false, "both"},
		{"a pre-bound volume too small is passed over", claimOf("slow", "1Gi", rwo),
			[]*corev1.PersistentVolume{preBoundSmall, pvOf("fits", "slow", "1Gi", rwo)}, false, "fits"},
		{"pre-bound to an earlier claim of that name", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{otherUID}, false, ""},
		{"delayed binding: only pre-bound", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{pvOf("fits", "slow", "1Gi", rwo)}, true, ""},
		{"delayed binding: pre-bound", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{preBound}, true, "prebound"},
		{"not someone else's", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{taken}, false, ""},
		{"not released", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{released}, false, ""},
		{"not being deleted", claimOf("slow", "1Gi", rwo), []*corev1.PersistentVolume{deleting}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bestMatch(tc.claim, tc.volumes, tc.delayed)
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

func TestCheckRequested(t *testing.T) {
	rwo, rwx := corev1.ReadWriteOnce, corev1.ReadWriteMany
	block := corev1.PersistentVolumeBlock
	blockPV := pvOf("block", "slow", "1Gi", rwo)
	blockPV.Spec.VolumeMode = &block
	deleting := pvOf("deleting", "slow", "1Gi", rwo)
	deleting.DeletionTimestamp = &metav1.Time{}
	gold := "gold"
	goldClaim := claimOf("slow", "1Gi", rwo)
	goldClaim.Spec.VolumeAttributesClassName = &gold
	goldPV := pvOf("gold", "slow", "1Gi", rwo)
	goldPV.Spec.VolumeAttributesClassName = &gold
	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		pv    *corev1.PersistentVolume
		want  string
	}{
		{"fits", claimOf("slow", "1Gi", rwo), pvOf("ok", "slow", "2Gi", rwo, rwx), ""},
		{"deleting first", claimOf("fast", "5Gi", rwo), deleting, `the volume is marked for deletion "deleting"`},
		{"size before class", claimOf("fast", "5Gi", rwo), pvOf("small", "slow", "1Gi", rwo), "requested PV is too small"},
		{"class", claimOf("fast", "1Gi", rwo), pvOf("slow", "slow", "1Gi", rwo), "storageClassName does not match"},
		{"attributes class of the claim", goldClaim, pvOf("plain", "slow", "1Gi", rwo), "volumeAttributesClassName does not match"},
		{"attributes class of the volume", claimOf("slow", "1Gi", rwo), goldPV, "volumeAttributesClassName does not match"},
		{"same attributes class", goldClaim, goldPV, ""},
		{"volume mode", claimOf("slow", "1Gi", rwo), blockPV, "incompatible volumeMode"},
		{"access modes", claimOf("slow", "1Gi", rwx), pvOf("rwo", "slow", "1Gi", rwo), "incompatible accessMode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := checkRequested(tc.pv, tc.claim); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("checkRequested = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeleteInTree(t *testing.T) {
	nfs := pvOf("nfs", "", "1Gi", corev1.ReadWriteMany)
	nfs.Spec.NFS = &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/export"}
	rbd := pvOf("rbd", "", "1Gi", corev1.ReadWriteOnce)
	rbd.Spec.RBD = &corev1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "image"}
	host := func(path string) *corev1.PersistentVolume {
		pv := pvOf("host", "", "1Gi", corev1.ReadWriteOnce)
		pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: path}
		return pv
	}
	for _, tc := range []struct {
		pv   *corev1.PersistentVolume
		want string
	}{
		{nfs, `error getting deleter volume plugin for volume "nfs": no deletable volume plugin matched`},
		{host("/srv/data"), "host_path deleter only supports /tmp/.+ but received provided /srv/data"},
		{host("/tmp/data"), ""},
		{rbd, `error getting deleter volume plugin for volume "rbd": no volume plugin matched`},
	} {
		got := ""
		if err := deleteInTree(tc.pv); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("deleteInTree(%s) = %q, want %q", tc.pv.Name, got, tc.want)
		}
	}
}
