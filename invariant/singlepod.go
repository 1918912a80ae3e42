package invariant

import (
	"fmt"

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
				if singlePodMode(objs.pvOf(c.Volume), c.AccessMode) {
					for _, other := range othersHolding(published[c.Volume], pod) {
						found = append(found, Violation{
							Message: fmt.Sprintf("#%d NodePublishVolume of ReadWriteOncePod volume %s for pod %s while it is still published for pod %s (%s)",
								e.Seq, c.Volume, pod, other.name, seqList(other.seqs)),
							Entries: append([]int{e.Seq}, other.seqs...),
						})
					}
				}
				hold(published, c.Volume, pod, c.TargetPath, e.Seq)
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
