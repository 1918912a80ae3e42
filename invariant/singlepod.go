package invariant

import (
	"fmt"
	"maps"
	"slices"

	"github.com/csisim/csisim/trace"
)

// singlePod: a ReadWriteOncePod volume is published for one pod at a time.
var singlePod = Invariant{
	Name: "rwop-single-pod",
	Doc:  "a ReadWriteOncePod volume is never published to two pods at once",
	Check: func(h *History) []Violation {
		objs := newObjects()
		// Per volume: pod UID -> target -> the NodePublishVolume's Seq.
		published := map[string]map[string]map[string]int{}
		var found []Violation
		for _, e := range h.Entries {
			objs.apply(e)
			c := e.Call
			if e.Kind != trace.CSI || c == nil || c.Code != 0 || c.Volume == "" {
				continue
			}
			switch e.Verb {
			case "NodePublishVolume":
				pod := podOfTarget(c.TargetPath)
				if pod == "" {
					pod = c.TargetPath
				}
				pods := ensure(published, c.Volume)
				if singlePodMode(objs.pvOf(c.Volume), c.AccessMode) {
					for _, other := range slices.Sorted(maps.Keys(pods)) {
						if other == pod || len(pods[other]) == 0 {
							continue
						}
						seqs := slices.Sorted(maps.Values(pods[other]))
						found = append(found, Violation{
							Message: fmt.Sprintf("#%d NodePublishVolume of ReadWriteOncePod volume %s for pod %s while it is still published for pod %s (%s)",
								e.Seq, c.Volume, pod, other, seqList(seqs)),
							Entries: append([]int{e.Seq}, seqs...),
						})
					}
				}
				if pods[pod] == nil {
					pods[pod] = map[string]int{}
				}
				pods[pod][c.TargetPath] = e.Seq
			case "NodeUnpublishVolume":
				for _, targets := range published[c.Volume] {
					delete(targets, c.TargetPath)
				}
			case "DeleteVolume":
				delete(published, c.Volume)
			}
		}
		return found
	},
}
