package invariant

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

// lifecycles builds a history of n volumes, each created, attached,
// staged, published for a pod that checks its data, and taken down again:
// 16 entries a volume, as a run of the simulator records them.
func lifecycles(n int) *History {
	h := hist{end: EndState{Observed: true, MountsKnown: true, Nodes: []corev1.Node{*node("node-1", true), *node("node-2", true)}}}
	h.call("ControllerGetCapabilities", trace.CSICall{Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME"}})
	h.call("NodeGetCapabilities", trace.CSICall{Node: "node-1", Capabilities: []string{"STAGE_UNSTAGE_VOLUME"}})
	for i := range n {
		nd := fmt.Sprintf("node-%d", i%2+1)
		vol, pvName, uid := fmt.Sprintf("vol-%d", i), fmt.Sprintf("pv-%d", i), fmt.Sprintf("uid-%d", i)
		claim := fmt.Sprintf("data-%d", i)
		stage := trace.CSICall{Node: nd, Volume: vol, StagingPath: staging(nd, vol)}
		publish := trace.CSICall{Node: nd, Volume: vol, StagingPath: stage.StagingPath, TargetPath: target(nd, uid, pvName), AccessMode: "SINGLE_NODE_WRITER"}
		attach := trace.CSICall{Volume: vol, NodeID: nd}
		h.call("CreateVolume", trace.CSICall{Volume: vol, Name: "pvc-" + uid})
		h.write(pv(pvName, vol, corev1.ReadWriteOnce), false)
		h.write(pvc(claim, pvName), false)
		h.write(va("va-"+vol, pvName, nd), false)
		h.call("ControllerPublishVolume", attach)
		h.call("NodeStageVolume", stage)
		h.call("NodePublishVolume", publish)
		h.data(trace.DataCheck{PodUID: uid, Namespace: "default", Pod: "app", Claim: claim, Volume: pvName, Wrote: true})
		h.write(pod("app-"+uid, uid, nd, corev1.PodRunning, claimVolume("data", claim)), false)
		h.call("NodeUnpublishVolume", publish)
		h.write(pod("app-"+uid, uid, nd, corev1.PodRunning, claimVolume("data", claim)), true)
		h.call("NodeUnstageVolume", stage)
		h.call("ControllerUnpublishVolume", attach)
		h.write(va("va-"+vol, pvName, nd), true)
		h.call("DeleteVolume", trace.CSICall{Volume: vol})
		h.write(pv(pvName, vol, corev1.ReadWriteOnce), true)
	}
	return &History{Entries: h.entries, End: h.end}
}

// BenchmarkCheck is the checker's cost for histories of about 1,000 and
// 10,000 entries; ns/1k-entries is the cost per 1,000 timeline entries.
func BenchmarkCheck(b *testing.B) {
	for _, volumes := range []int{62, 625} {
		h := lifecycles(volumes)
		b.Run(fmt.Sprintf("entries=%d", len(h.Entries)), func(b *testing.B) {
			for b.Loop() {
				if vs := Check(h); len(vs) > 0 {
					b.Fatalf("the benchmark's history breaks invariants: %+v", vs[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(h.Entries))*1000, "ns/1k-entries")
		})
	}
}
