package invariant

import (
	"fmt"
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/trace"
)

// restoredData: a claim restored from a VolumeSnapshot holds what its
// source claim held when the snapshot was taken — every marker a pod's
// workload wrote into the source before the CreateSnapshot call (named
// snapshot-<VolumeSnapshot uid>) answered is found intact, copied, by
// every pod of the restored claim. The snapshot, its source and the
// restore are read from the API writes in the timeline; where they are not
// there (a backend that does not record the snapshot kinds) nothing is
// checked.
var restoredData = Invariant{
	Name: "restored-data",
	Doc:  "every marker written into a claim before its snapshot was taken is found by the pods of a claim restored from that snapshot",
	Check: func(h *History) []Violation {
		type marker struct {
			pod string // pod UID
			who string // namespace/name
			seq int
		}
		type source struct{ claim, snapshot, uid string }
		snapshots := map[string]*snapv1.VolumeSnapshot{} // namespace/name, as last written
		restoredFrom := map[string]source{}              // restored claim -> its source
		cut := map[string]int{}                          // snapshot UID -> CreateSnapshot entry
		written := map[string][]marker{}                 // claim -> markers written
		var found []Violation
		for _, e := range h.Entries {
			switch {
			case e.Kind == trace.API && e.Write != nil && e.Write.Object != nil:
				switch obj := e.Write.Object.(type) {
				case *snapv1.VolumeSnapshot:
					if !e.Write.Removed {
						snapshots[obj.Namespace+"/"+obj.Name] = obj
					}
				case *corev1.PersistentVolumeClaim:
					ds := obj.Spec.DataSource
					key := obj.Namespace + "/" + obj.Name
					if ds == nil || ds.Kind != "VolumeSnapshot" || e.Write.Removed {
						continue
					}
					if _, known := restoredFrom[key]; known {
						continue
					}
					s := snapshots[obj.Namespace+"/"+ds.Name]
					if s == nil || s.Spec.Source.PersistentVolumeClaimName == nil {
						continue
					}
					restoredFrom[key] = source{claim: obj.Namespace + "/" + *s.Spec.Source.PersistentVolumeClaimName,
						snapshot: obj.Namespace + "/" + ds.Name, uid: string(s.UID)}
				}
			case e.Kind == trace.CSI && e.Verb == "CreateSnapshot" && e.Call != nil && e.Call.Code == codes.OK:
				uid, ok := strings.CutPrefix(e.Object, "snapshot-")
				if _, seen := cut[uid]; ok && !seen {
					cut[uid] = e.Seq
				}
			case e.Kind == trace.Data && e.Check != nil && e.Check.Skipped == "":
				d := e.Check
				claim := d.Namespace + "/" + d.Claim
				if src, ok := restoredFrom[claim]; ok {
					if at, taken := cut[src.uid]; taken {
						for _, m := range written[src.claim] {
							if m.seq < at && !slices.Contains(d.Copied, m.pod) {
								found = append(found, Violation{
									Message: fmt.Sprintf("#%d pod %s/%s of claim %s, restored from snapshot %s, did not find the marker pod %s wrote into claim %s at #%d, before the snapshot was taken at #%d",
										e.Seq, d.Namespace, d.Pod, claim, src.snapshot, m.who, src.claim, m.seq, at),
									Entries: []int{e.Seq, m.seq, at},
								})
							}
						}
					}
				}
				if d.Wrote {
					written[claim] = append(written[claim], marker{pod: d.PodUID, who: d.Namespace + "/" + d.Pod, seq: e.Seq})
				}
			}
		}
		return found
	},
}
