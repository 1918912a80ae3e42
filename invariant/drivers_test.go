package invariant

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

// driverCall adds a successful CSI call to driver.
func (h *hist) driverCall(driver, verb string, c trace.CSICall) int {
	seq := h.call(verb, c)
	h.entries[seq-1].Driver = driver
	return seq
}

// In a run of two drivers, each driver's calls are judged against its own
// capabilities and volumes: the file driver, which does not stage,
// publishes without NodeStageVolume although the block driver stages;
// and a volume the file driver made and never deleted is its leak, named
// once, not the block driver's.
func TestEachDriverJudgedAlone(t *testing.T) {
	const block, files = "block.example.com", "files.example.com"
	h := &hist{end: EndState{Observed: true}}
	h.driverCall(block, "NodeGetCapabilities", trace.CSICall{Node: "node-1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
	h.driverCall(files, "NodeGetCapabilities", trace.CSICall{Node: "node-1"})
	h.driverCall(block, "CreateVolume", trace.CSICall{Volume: "b1", Name: "pvc-b"})
	leak := h.driverCall(files, "CreateVolume", trace.CSICall{Volume: "f1", Name: "pvc-f"})
	h.driverCall(block, "NodeStageVolume", trace.CSICall{Node: "node-1", Volume: "b1", StagingPath: staging("node-1", "b1")})
	h.driverCall(block, "NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "b1", StagingPath: staging("node-1", "b1"), TargetPath: target("node-1", "a", "pv-b")})
	h.driverCall(files, "NodePublishVolume", trace.CSICall{Node: "node-1", Volume: "f1", TargetPath: target("node-1", "a", "pv-f")})
	pvB := pv("pv-b", "b1", corev1.ReadWriteOnce)
	pvB.Spec.CSI.Driver = block
	h.end.PersistentVolumes = []corev1.PersistentVolume{*pvB}
	h.end.Pods = []corev1.Pod{*pod("a", "a", "node-1", corev1.PodRunning)}
	h.end.Nodes = []corev1.Node{*node("node-1", true)}

	if vs := h.check(t, callOrder); len(vs) != 0 {
		t.Errorf("the file driver's publish was judged by the block driver's staging: %v", vs)
	}
	vs := h.check(t, noLeakedVolume)
	expectViolations(t, vs, 1, leak)
	if len(vs) == 1 && !strings.Contains(vs[0].Message, "f1") {
		t.Errorf("the leak is %q, want the file driver's volume f1", vs[0].Message)
	}
	// The same calls without driver names are one driver's: its
	// NodePublishVolume of f1 came without NodeStageVolume.
	for i := range h.entries {
		h.entries[i].Driver = ""
	}
	if vs := h.check(t, callOrder); len(vs) == 0 {
		t.Error("one driver's publish without stage was not found: the test sees nothing")
	}
}

func TestMountOwner(t *testing.T) {
	owners := map[string][]string{"block.example.com": {"pv-b"}, "files.example.com": {"pv-f"}}
	for m, want := range map[string]string{
		"/r/nodes/node-1/kubelet/plugins/kubernetes.io/csi/block.example.com/abc/globalmount": "block.example.com",
		"/r/nodes/node-1/kubelet/pods/u/volumes/kubernetes.io~csi/pv-f/mount":                 "files.example.com",
		"/r/nodes/node-1/kubelet/pods/u/volumes/kubernetes.io~empty-dir/x":                    "",
	} {
		if got := mountOwner(m, owners); got != want {
			t.Errorf("%s: owner %q, want %q", m, got, want)
		}
	}
}
