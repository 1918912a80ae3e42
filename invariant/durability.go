package invariant

import (
	"fmt"
	"slices"

	"github.com/csisim/csisim/trace"
)

// dataDurability: what a pod's built-in workload wrote into a volume is
// there, intact, for every later pod of the same claim and volume: data
// survives unmounts, reschedules and restarts.
var dataDurability = Invariant{
	Name: "data-durability",
	Doc:  "the marker each pod's workload wrote into a volume is found intact by every later pod of the same claim",
	Check: func(h *History) []Violation {
		type volumeKey struct{ claim, volume string }
		// The DATA entries that wrote a marker, by claim and volume.
		written := map[volumeKey][]trace.Entry{}
		var found []Violation
		for _, e := range h.Entries {
			d := e.Check
			if e.Kind != trace.Data || d == nil || d.Skipped != "" {
				continue
			}
			key := volumeKey{d.Namespace + "/" + d.Claim, d.Volume}
			for _, uid := range d.Corrupt {
				found = append(found, Violation{
					Message: fmt.Sprintf("#%d pod %s/%s found the marker of pod %s in volume %s (claim %s) corrupt", e.Seq, d.Namespace, d.Pod, uid, d.Volume, key.claim),
					Entries: append([]int{e.Seq}, writerOf(written[key], uid)...),
				})
			}
			for _, w := range written[key] {
				uid := w.Check.PodUID
				if uid == d.PodUID || slices.Contains(d.Found, uid) || slices.Contains(d.Corrupt, uid) {
					continue
				}
				found = append(found, Violation{
					Message: fmt.Sprintf("#%d pod %s/%s did not find in volume %s (claim %s) the marker pod %s/%s wrote at #%d: the data is gone",
						e.Seq, d.Namespace, d.Pod, d.Volume, key.claim, w.Check.Namespace, w.Check.Pod, w.Seq),
					Entries: []int{e.Seq, w.Seq},
				})
			}
			if d.Err != "" {
				found = append(found, Violation{
					Message: fmt.Sprintf("#%d pod %s/%s could not check volume %s (claim %s): %s", e.Seq, d.Namespace, d.Pod, d.Volume, key.claim, d.Err),
					Entries: []int{e.Seq},
				})
			}
			if d.Wrote {
				written[key] = append(written[key], e)
			}
		}
		return found
	},
}

func writerOf(entries []trace.Entry, uid string) []int {
	for _, w := range entries {
		if w.Check.PodUID == uid {
			return []int{w.Seq}
		}
	}
	return nil
}
