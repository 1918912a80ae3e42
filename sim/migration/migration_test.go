package migration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pv(src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src}}
}

// TestPV: an in-tree EBS volume is its driver's CSI volume with the bare
// volume ID (the aws://zone/ prefix gone), under the PV's own name, and
// the PV given is not changed; a CSI volume and an rbd volume stay as
// they are.
func TestPV(t *testing.T) {
	ebs := pv(corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-1", FSType: "ext4"}})
	got, migrated, err := PV(ebs)
	if err != nil || !migrated {
		t.Fatalf("PV(ebs) = %v, %v", migrated, err)
	}
	if c := got.Spec.CSI; c == nil || c.Driver != "ebs.csi.aws.com" || c.VolumeHandle != "vol-1" || c.FSType != "ext4" || got.Name != "pv" {
		t.Errorf("translated: %+v", got.Spec.PersistentVolumeSource)
	}
	if ebs.Spec.AWSElasticBlockStore == nil || ebs.Spec.CSI != nil {
		t.Errorf("the PV given was changed: %+v", ebs.Spec.PersistentVolumeSource)
	}
	csiPV := pv(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}})
	if got, migrated, _ := PV(csiPV); migrated || got != csiPV {
		t.Errorf("a CSI volume was translated: %v", migrated)
	}
	rbd := pv(corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{CephMonitors: []string{"m"}, RBDImage: "i"}})
	if _, migrated, _ := PV(rbd); migrated {
		t.Error("an rbd volume was translated: rbd has no migration")
	}
	if Removed(rbd) != "kubernetes.io/rbd" || Removed(ebs) != "" || Removed(csiPV) != "" {
		t.Errorf("Removed: rbd %q, ebs %q, csi %q", Removed(rbd), Removed(ebs), Removed(csiPV))
	}
}

// TestNames: the plugin and driver names map both ways for a migrated
// plugin, and not at all for another.
func TestNames(t *testing.T) {
	if d, ok := DriverFor("kubernetes.io/aws-ebs"); !ok || d != "ebs.csi.aws.com" {
		t.Errorf("DriverFor(aws-ebs) = %q, %v", d, ok)
	}
	if p, ok := PluginFor("pd.csi.storage.gke.io"); !ok || p != "kubernetes.io/gce-pd" {
		t.Errorf("PluginFor(pd.csi.storage.gke.io) = %q, %v", p, ok)
	}
	for _, name := range []string{"kubernetes.io/rbd", "hostpath.csisim.io", ""} {
		if _, ok := DriverFor(name); ok {
			t.Errorf("DriverFor(%q) says migrated", name)
		}
		if _, ok := PluginFor(name); ok {
			t.Errorf("PluginFor(%q) says migrated", name)
		}
	}
}

// TestInline: a pod's inline EBS volume is its driver's CSI volume named
// <driver>-<volume ID>, with the bare volume ID, the partition as a
// volume attribute, ReadWriteOnce and the Filesystem mode; the volume
// given is not changed; a claim volume, an inline CSI volume and an rbd
// volume are not translated.
func TestInline(t *testing.T) {
	ebs := &corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-1", FSType: "ext4"}}}
	got, migrated, err := Inline(ebs, "default")
	if err != nil || !migrated {
		t.Fatalf("Inline(ebs) = %v, %v", migrated, err)
	}
	c := got.Spec.CSI
	if c == nil || got.Name != "ebs.csi.aws.com-vol-1" || c.Driver != "ebs.csi.aws.com" || c.VolumeHandle != "vol-1" || c.FSType != "ext4" ||
		c.VolumeAttributes["partition"] != "0" {
		t.Errorf("translated: %s %+v", got.Name, got.Spec.PersistentVolumeSource)
	}
	if len(got.Spec.AccessModes) != 1 || got.Spec.AccessModes[0] != corev1.ReadWriteOnce ||
		got.Spec.VolumeMode == nil || *got.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("access modes %v, volume mode %v", got.Spec.AccessModes, got.Spec.VolumeMode)
	}
	if ebs.AWSElasticBlockStore.VolumeID != "aws://us-east-1a/vol-1" || ebs.CSI != nil {
		t.Errorf("the volume given was changed: %+v", ebs.VolumeSource)
	}
	for _, v := range []corev1.Volume{
		{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "i", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "ebs.csi.aws.com"}}},
		{Name: "r", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"m"}, RBDImage: "i"}}},
	} {
		if pv, migrated, err := Inline(&v, "default"); migrated || pv != nil || err != nil {
			t.Errorf("Inline(%s) = %v, %v, %v", v.Name, pv, migrated, err)
		}
	}
	if RemovedInline(&corev1.Volume{Name: "r", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{}}}) != "kubernetes.io/rbd" ||
		RemovedInline(&corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{}}}) != "kubernetes.io/cephfs" ||
		RemovedInline(ebs) != "" {
		t.Error("RemovedInline names the wrong plugins")
	}
	if _, migrated, err := Inline(&corev1.Volume{Name: "bad", VolumeSource: corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://"}}}, "default"); !migrated || err == nil {
		t.Errorf("a volume ID the library cannot read: %v, %v", migrated, err)
	}
}
