package invariant

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/trace"
)

func TestNothingLeaked(t *testing.T) {
	stage := trace.CSICall{Node: "node-1", Volume: "v1", StagingPath: staging("node-1", "v1")}
	publish := trace.CSICall{Node: "node-1", Volume: "v1", TargetPath: target("node-1", "a", "pv1")}
	running := pod("app", "a", "node-1", corev1.PodRunning, claimVolume("data", "data"))
	tests := []struct {
		name  string
		build func(h *hist)
		want  string // what the one violation says, "" for none
	}{
		{"created, never deleted, no PV: no-leaked-volume's", func(h *hist) {
			h.call("CreateVolume", trace.CSICall{Volume: "v1"})
		}, ""},
		{"published for a pod still there", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.call("NodePublishVolume", publish)
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			h.end.PersistentVolumeClaims = append(h.end.PersistentVolumeClaims, *pvc("data", "pv1"))
			h.end.Pods = append(h.end.Pods, *running)
		}, ""},
		{"published for a pod that is gone", func(h *hist) {
			h.call("NodePublishVolume", publish)
		}, "its pod a is gone"},
		{"staged, no pod uses it", func(h *hist) {
			h.call("NodeStageVolume", stage)
		}, "no pod there uses it"},
		{"staged, forgotten by a restarted kubelet", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.write(nodeUsing("node-1", "v1"), false)
			h.add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: "kubelet-restart", Object: "Node node-1"})
			h.write(node("node-1", true), false) // the restarted kubelet reports nothing in use
		}, ""},
		{"staged, a restarted kubelet still reports it in use", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: "kubelet-restart", Object: "Node node-1"})
			h.write(nodeUsing("node-1", "v1"), false)
		}, "no pod there uses it"},
		{"staged after the kubelet restarted", func(h *hist) {
			h.add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: "kubelet-restart", Object: "Node node-1"})
			h.call("NodeStageVolume", stage)
			h.write(node("node-1", true), false)
		}, "no pod there uses it"},
		{"staged on a node that is down", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.end.Nodes[0] = *node("node-1", false)
		}, ""},
		{"attached, no VolumeAttachment", func(h *hist) {
			h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
		}, "no VolumeAttachment is left"},
		{"attached, its VolumeAttachment there", func(h *hist) {
			h.call("ControllerPublishVolume", trace.CSICall{Volume: "v1", NodeID: "node-1"})
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			h.end.PersistentVolumeClaims = append(h.end.PersistentVolumeClaims, *pvc("data", "pv1"))
			h.end.Pods = append(h.end.Pods, *running)
			h.end.VolumeAttachments = append(h.end.VolumeAttachments, *va("va1", "pv1", "node-1"))
		}, ""},
		{"a VolumeAttachment nothing uses", func(h *hist) {
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			h.end.VolumeAttachments = append(h.end.VolumeAttachments, *va("va1", "pv1", "node-1"))
		}, "VolumeAttachment va1"},
		{"a VolumeAttachment being detached", func(h *hist) {
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			a := va("va1", "pv1", "node-1")
			a.DeletionTimestamp = &metav1.Time{}
			h.end.VolumeAttachments = append(h.end.VolumeAttachments, *a)
		}, ""},
		{"a VolumeAttachment the node still reports in use", func(h *hist) {
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			h.end.VolumeAttachments = append(h.end.VolumeAttachments, *va("va1", "pv1", "node-1"))
			h.end.Nodes[0].Status.VolumesInUse = []corev1.UniqueVolumeName{"kubernetes.io/csi/d^v1"}
		}, ""},
		{"a migrated inline volume's VolumeAttachment, its pod there", func(h *hist) {
			h.end.Pods = append(h.end.Pods, *pod("app", "a", "node-1", corev1.PodRunning, ebsVolume("data", "vol-1")))
			h.end.VolumeAttachments = append(h.end.VolumeAttachments, *inlineVA("va1", "vol-1", "node-1"))
		}, ""},
		{"a migrated inline volume's VolumeAttachment, its pod gone", func(h *hist) {
			h.end.VolumeAttachments = append(h.end.VolumeAttachments, *inlineVA("va1", "vol-1", "node-1"))
		}, "VolumeAttachment va1 (volume vol-1, node node-1) is left"},
		{"a migrated inline volume staged, its pod there", func(h *hist) {
			h.call("NodeStageVolume", trace.CSICall{Node: "node-1", Volume: "vol-1", StagingPath: staging("node-1", "vol-1")})
			h.end.Pods = append(h.end.Pods, *pod("app", "a", "node-1", corev1.PodRunning, ebsVolume("data", "vol-1")))
		}, ""},
		{"a mount left after NodeUnstageVolume said OK", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.call("NodeUnstageVolume", stage)
			h.end.Mounts, h.end.MountsKnown = []string{stage.StagingPath}, true
		}, "NodeUnstageVolume #2 answered OK"},
		{"a real kubelet's own projected token volume", func(h *hist) {
			h.end.Mounts, h.end.MountsKnown = []string{"/k/pods/uid-1/volumes/kubernetes.io~projected/kube-api-access-x"}, true
		}, ""},
		{"a CSI target left mounted, nothing staged or published", func(h *hist) {
			h.end.Mounts, h.end.MountsKnown = []string{"/k/pods/uid-1/volumes/kubernetes.io~csi/pv1/mount"}, true
		}, "is still mounted, but no volume is staged or published there"},
		{"a subPath bind mount left after its pod is gone", func(h *hist) {
			h.call("NodePublishVolume", publish)
			h.call("NodeUnpublishVolume", publish)
			h.end.Mounts, h.end.MountsKnown = []string{"/k/pods/a/volume-subpaths/pv1/app/0"}, true
		}, "/k/pods/a/volume-subpaths/pv1/app/0 is still mounted, but no volume is staged or published there"},
		{"a subPath bind mount of a pod still running", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.call("NodePublishVolume", publish)
			h.end.Pods = append(h.end.Pods, *running)
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			h.end.PersistentVolumeClaims = append(h.end.PersistentVolumeClaims, *pvc("data", "pv1"))
			h.end.Mounts, h.end.MountsKnown = []string{"/k/pods/a/volume-subpaths/pv1/app/0"}, true
		}, ""},
		{"the mount of a volume still staged", func(h *hist) {
			h.call("NodeStageVolume", stage)
			h.call("NodePublishVolume", publish)
			h.end.Pods = append(h.end.Pods, *running)
			h.end.PersistentVolumes = append(h.end.PersistentVolumes, *pv("pv1", "v1", corev1.ReadWriteOnce))
			h.end.PersistentVolumeClaims = append(h.end.PersistentVolumeClaims, *pvc("data", "pv1"))
			h.end.Mounts, h.end.MountsKnown = []string{stage.StagingPath, publish.TargetPath}, true
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hist{end: EndState{Observed: true, Nodes: []corev1.Node{*node("node-1", true)}}}
			tt.build(&h)
			got := h.check(t, nothingLeaked)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("got %+v, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tt.want)):
				t.Fatalf("got %+v, want one saying %q", got, tt.want)
			}
		})
	}
}

func TestNothingLeakedNeedsTheEndState(t *testing.T) {
	var h hist // End.Observed false: the backend could not read it
	h.call("CreateVolume", trace.CSICall{Volume: "v1"})
	h.end.VolumeAttachments = []storagev1.VolumeAttachment{*va("va1", "pv1", "node-1")}
	expectViolations(t, h.check(t, nothingLeaked), 0)
}

// ebsVolume is a pod's inline in-tree EBS volume; inlineVA the
// VolumeAttachment of its translated volume.
func ebsVolume(name, volumeID string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "aws://us-east-1a/" + volumeID}}}
}

func inlineVA(name, handle, node string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "ebs.csi.aws.com", NodeName: node, Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: handle}}}}}}
}
