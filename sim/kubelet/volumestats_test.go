package kubelet

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestVolumeStatsMetrics: NodeGetVolumeStats answers become the kubelet's
// kubelet_volume_stats gauges, one series per claim (the first answer for
// it), in the text the real kubelet's /metrics serves; a volume without a
// claim has none.
func TestVolumeStatsMetrics(t *testing.T) {
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, claim := range map[string]string{"pv-a": "data", "pv-b": "logs", "pv-free": ""} {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if claim != "" {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "team", Name: claim}
		}
		if err := volumes.Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	k := &Kubelet{volumes: corelisters.NewPersistentVolumeLister(volumes)}
	answer := func(bytes, inodes []int64) *csi.NodeGetVolumeStatsResponse {
		r := &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: bytes[0], Available: bytes[1], Used: bytes[2]}}}
		if inodes != nil {
			r.Usage = append(r.Usage, &csi.VolumeUsage{Unit: csi.VolumeUsage_INODES, Total: inodes[0], Available: inodes[1], Used: inodes[2]})
		}
		return r
	}
	fresh := map[claimRef]volumeUsage{}
	k.noteVolumeStats(fresh, "pv-b", answer([]int64{1 << 30, 1<<30 - 4096, 4096}, []int64{1000, 990, 10}))
	k.noteVolumeStats(fresh, "pv-a", answer([]int64{2 << 30, 2 << 30, 0}, nil))
	k.noteVolumeStats(fresh, "pv-a", answer([]int64{9, 9, 9}, nil)) // a second pod of the claim: not counted again
	k.noteVolumeStats(fresh, "pv-free", answer([]int64{5, 5, 0}, nil))
	k.noteVolumeStats(fresh, "pv-gone", answer([]int64{5, 5, 0}, nil))
	k.volumeStats.replace(fresh)
	got, err := k.VolumeStatsMetrics()
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP kubelet_volume_stats_available_bytes [ALPHA] Number of available bytes in the volume
# TYPE kubelet_volume_stats_available_bytes gauge
kubelet_volume_stats_available_bytes{namespace="team",persistentvolumeclaim="data"} 2.147483648e+09
kubelet_volume_stats_available_bytes{namespace="team",persistentvolumeclaim="logs"} 1.073737728e+09
# HELP kubelet_volume_stats_capacity_bytes [ALPHA] Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="team",persistentvolumeclaim="data"} 2.147483648e+09
kubelet_volume_stats_capacity_bytes{namespace="team",persistentvolumeclaim="logs"} 1.073741824e+09
# HELP kubelet_volume_stats_inodes [ALPHA] Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
kubelet_volume_stats_inodes{namespace="team",persistentvolumeclaim="data"} 0
kubelet_volume_stats_inodes{namespace="team",persistentvolumeclaim="logs"} 1000
# HELP kubelet_volume_stats_inodes_free [ALPHA] Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
kubelet_volume_stats_inodes_free{namespace="team",persistentvolumeclaim="data"} 0
kubelet_volume_stats_inodes_free{namespace="team",persistentvolumeclaim="logs"} 990
# HELP kubelet_volume_stats_inodes_used [ALPHA] Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="team",persistentvolumeclaim="data"} 0
kubelet_volume_stats_inodes_used{namespace="team",persistentvolumeclaim="logs"} 10
# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="team",persistentvolumeclaim="data"} 0
kubelet_volume_stats_used_bytes{namespace="team",persistentvolumeclaim="logs"} 4096
`
	if string(got) != want {
		t.Errorf("metrics:\n%s\nwant:\n%s", got, want)
	}
}
