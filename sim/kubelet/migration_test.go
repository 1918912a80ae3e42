package kubelet

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/attachdetach"
)

// TestInlineInTreeVolumeOfMigratedPlugin: a pod's inline in-tree EBS
// volume is set up as its migrated driver's volume, as v1.37's kubelet
// does after csi-translation-lib: waited for attached under its CSI unique
// name, staged by the translated volume ID at the volume's global path,
// published under the translated volume's name (ebs.csi.aws.com-<id>)
// with the volume attributes the library gives it, never expanded; and
// unpublished and unstaged when the pod goes.
func TestInlineInTreeVolumeOfMigratedPlugin(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	e := newEnv(t, envOptions{caps: stageCaps(), pvDriver: ebs, driverName: ebs,
		inTree: &corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
			VolumeID: "aws://us-east-1a/" + testHandle, FSType: "ext4"}}})
	e.runningPod()

	if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeStageVolume", "NodePublishVolume"}) {
		t.Fatalf("calls = %v", got)
	}
	st, pub := e.node.stage[0], e.node.pub[0]
	wantStaging := filepath.Join(e.dir, "plugins/kubernetes.io/csi", ebs, fmt.Sprintf("%x", sha256.Sum256([]byte(testHandle))), "globalmount")
	target := filepath.Join(e.dir, "pods/uid-1/volumes/kubernetes.io~csi", ebs+"-"+testHandle, "mount")
	if st.GetVolumeId() != testHandle || st.GetStagingTargetPath() != wantStaging || st.GetVolumeContext()["partition"] != "0" ||
		st.GetPublishContext()["devicePath"] != "/dev/loop9" {
		t.Errorf("NodeStageVolume %v", st)
	}
	if pub.GetVolumeId() != testHandle || pub.GetTargetPath() != target || pub.GetStagingTargetPath() != wantStaging ||
		pub.GetVolumeContext()["partition"] != "0" || pub.GetReadonly() || pub.GetVolumeCapability().GetMount().GetFsType() != "ext4" {
		t.Errorf("NodePublishVolume %v", pub)
	}
	if got := e.k.actual.stagedVolumes(); !slices.Equal(got, []corev1.UniqueVolumeName{attachdetach.UniqueVolumeName(ebs, testHandle)}) {
		t.Errorf("staged volumes %v, want the volume's CSI name", got)
	}
	for _, ev := range e.events() {
		if ev.Type == corev1.EventTypeWarning {
			t.Errorf("event %s: %s", ev.Reason, ev.Message)
		}
	}
	if _, known := e.k.desired.size(attachdetach.UniqueVolumeName(ebs, testHandle)); known {
		t.Error("a size is wanted of an inline volume: it is never expanded")
	}

	e.deletePod()
	if got := strings.Join(e.node.lifecycle(), ","); got != "NodeStageVolume,NodePublishVolume,NodeUnpublishVolume,NodeUnstageVolume" {
		t.Errorf("calls after the pod went: %s", got)
	}
}

// TestInlineVolumeOfRemovedPlugin: a pod's inline rbd volume finds no
// plugin in v1.37 (rbd was removed without a migration): the populator
// fails it with AddPodToVolume's words, naming the pod volume, and
// nothing is staged or published.
func TestInlineVolumeOfRemovedPlugin(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(),
		inTree: &corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img", RBDPool: "rbd"}}})
	p := e.k.processVolumes(e.pod)
	want := `failed to get Plugin from volumeSpec for volume "data" err=no volume plugin matched`
	if !slices.Equal(p.failed, []string{"data"}) || !slices.Equal(p.errs, []string{want}) {
		t.Errorf("failed %v, errors %q; want [data], %q", p.failed, p.errs, want)
	}
	_ = e.sync("default/app") // the pod waits: what it returns is how long
	if got := e.node.lifecycle(); len(got) != 0 {
		t.Errorf("calls = %v", got)
	}
}
