package attachdetach

import (
	"context"
	"strings"
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

// TestInlineInTreeVolumeIsAttachedByItsMigratedDriver: a pod's inline
// in-tree EBS volume gets the VolumeAttachment the CSI attacher makes for
// a migrated inline volume: named by the translated volume ID, attacher
// ebs.csi.aws.com, the translated spec as spec.source.inlineVolumeSpec and
// no PV name; its events name the translated volume; it is detached once
// the pod is gone and the node no longer uses it.
func TestInlineInTreeVolumeIsAttachedByItsMigratedDriver(t *testing.T) {
	h := newHarness(t)
	p := pod("app", "node-a")
	p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/vol-1", FSType: "ext4"}}
	h.add(node("node-a", corev1.ConditionTrue), p)
	h.sync("node-a")
	name := AttachmentName("vol-1", "ebs.csi.aws.com", "node-a")
	va, err := h.client.StorageV1().VolumeAttachments().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no VolumeAttachment %s (writes %v): %v", name, h.writes(), err)
	}
	src := va.Spec.Source
	if va.Spec.Attacher != "ebs.csi.aws.com" || src.PersistentVolumeName != nil || src.InlineVolumeSpec == nil {
		t.Fatalf("VolumeAttachment spec %+v", va.Spec)
	}
	if c := src.InlineVolumeSpec.CSI; c == nil || c.Driver != "ebs.csi.aws.com" || c.VolumeHandle != "vol-1" || c.FSType != "ext4" ||
		c.VolumeAttributes["partition"] != "0" || len(src.InlineVolumeSpec.AccessModes) != 1 {
		t.Errorf("inlineVolumeSpec %+v", src.InlineVolumeSpec)
	}

	va.Status.Attached = true
	h.add(va)
	h.sync("node-a")
	if ev := h.events(); len(ev) != 1 || ev[0].Reason != "SuccessfulAttachVolume" ||
		ev[0].Message != `AttachVolume.Attach succeeded for volume "ebs.csi.aws.com-vol-1" ` {
		t.Errorf("events %+v", ev)
	}

	if err := h.factory.Core().V1().Pods().Informer().GetIndexer().Delete(p); err != nil {
		t.Fatal(err)
	}
	h.c.observeVolumesInUse(node("node-a", corev1.ConditionTrue)) // its kubelet has unmounted it
	h.sync("node-a")
	if w := strings.Join(h.writes(), ", "); !strings.Contains(w, "delete volumeattachments") {
		t.Errorf("writes = %q once the pod is gone, want the detach", w)
	}
}
