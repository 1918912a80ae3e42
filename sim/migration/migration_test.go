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
