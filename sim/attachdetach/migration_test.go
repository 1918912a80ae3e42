package attachdetach

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestInTreeVolumeIsAttachedByItsMigratedDriver: a pod's claim bound to
// an in-tree EBS PV gets the VolumeAttachment the real controller makes
// for the translated volume: attacher ebs.csi.aws.com, named by the
// translated volume ID (the aws:// prefix gone), for the PV by name.
func TestInTreeVolumeIsAttachedByItsMigratedDriver(t *testing.T) {
	h := newHarness(t)
	pvc, pv := volume()
	pv.Spec.CSI = nil
	pv.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-1"}
	h.add(node("node-a", corev1.ConditionTrue), pvc, pv, pod("app", "node-a"))
	h.sync("node-a")
	name := AttachmentName("vol-1", "ebs.csi.aws.com", "node-a")
	va, err := h.client.StorageV1().VolumeAttachments().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no VolumeAttachment %s (writes %v): %v", name, h.writes(), err)
	}
	if va.Spec.Attacher != "ebs.csi.aws.com" || va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != "pv-1" ||
		va.Spec.Source.InlineVolumeSpec != nil {
		t.Errorf("VolumeAttachment spec %+v", va.Spec)
	}
}
