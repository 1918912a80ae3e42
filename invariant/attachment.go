package invariant

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csisim/csisim/trace"
)

// attachMatches: ControllerPublishVolume attaches a volume only to a node
// a VolumeAttachment of that volume names (spec.nodeName), as its node
// plugin identifies itself (NodeGetInfo's node ID).
var attachMatches = Invariant{
	Name: "attach-matches-attachment",
	Doc:  "a volume is controller-published only to a node a VolumeAttachment of that volume names",
	Check: func(h *History) []Violation {
		if !hasWrites(h.Entries) {
			return nil // no objects in the history: nothing to compare with
		}
		objs := newObjects()
		// The CSI node ID each Kubernetes node's plugin reported.
		nodeIDs := map[string]string{}
		var found []Violation
		for _, e := range h.Entries {
			objs.apply(e)
			c := e.Call
			if e.Kind != trace.CSI || c == nil {
				continue
			}
			if c.Node != "" && c.NodeID != "" {
				nodeIDs[c.Node] = c.NodeID
			}
			if e.Verb != "ControllerPublishVolume" || c.Code != 0 {
				continue
			}
			var named []string
			var seqs []int
			matched := false
			for _, name := range slices.Sorted(maps.Keys(objs.vas)) {
				va := objs.vas[name]
				if !attachmentOf(objs, va.Spec.Source, c.Volume) {
					continue
				}
				id := nodeIDs[va.Spec.NodeName]
				if id == "" {
					id = va.Spec.NodeName
				}
				if id == c.NodeID {
					matched = true
					break
				}
				named = append(named, fmt.Sprintf("%s (node %s, node ID %s, #%d)", name, va.Spec.NodeName, id, objs.vaSeq[name]))
				seqs = append(seqs, objs.vaSeq[name])
			}
			if matched {
				continue
			}
			msg := fmt.Sprintf("#%d ControllerPublishVolume of volume %s to node ID %s, but no VolumeAttachment of the volume names that node", e.Seq, c.Volume, c.NodeID)
			if len(named) > 0 {
				msg += ": the volume's VolumeAttachments are " + strings.Join(named, ", ")
			}
			found = append(found, Violation{Message: msg, Entries: append([]int{e.Seq}, seqs...)})
		}
		return found
	},
}

// hasWrites reports whether the history has API writes with their objects.
func hasWrites(entries []trace.Entry) bool {
	for _, e := range entries {
		if e.Write != nil && e.Write.Object != nil {
			return true
		}
	}
	return false
}
