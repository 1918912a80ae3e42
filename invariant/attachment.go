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
		// The CSI node IDs each Kubernetes node's plugin answered
		// NodeGetInfo with.
		ids := map[string][]string{}
		var found []Violation
		for _, e := range h.Entries {
			objs.apply(e)
			c := e.Call
			if e.Kind != trace.CSI || c == nil || c.Code != 0 {
				continue
			}
			if e.Verb == "NodeGetInfo" && c.Node != "" && c.NodeID != "" && !slices.Contains(ids[c.Node], c.NodeID) {
				ids[c.Node] = append(ids[c.Node], c.NodeID)
			}
			if e.Verb != "ControllerPublishVolume" {
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
				if owner := ownerOf(ids, c.NodeID); owner == va.Spec.NodeName {
					matched = true
					break
				}
				named = append(named, fmt.Sprintf("%s (node %s, #%d)", name, va.Spec.NodeName, objs.vaSeq[name]))
				seqs = append(seqs, objs.vaSeq[name])
			}
			if matched {
				continue
			}
			msg := fmt.Sprintf("#%d ControllerPublishVolume of volume %s to node ID %s (%s), but no VolumeAttachment of the volume names that node",
				e.Seq, c.Volume, c.NodeID, describeOwner(ids, c.NodeID))
			if len(named) > 0 {
				msg += ": the volume's VolumeAttachments are " + strings.Join(named, ", ")
			}
			found = append(found, Violation{Message: msg, Entries: append([]int{e.Seq}, seqs...)})
		}
		return found
	},
}

// ownerOf is the one node whose plugin reported CSI node ID id; a node
// whose plugin reported none is taken to have its own name as its ID. ""
// when no node or several nodes claim it.
func ownerOf(ids map[string][]string, id string) string {
	var owners []string
	for node, reported := range ids {
		if slices.Contains(reported, id) {
			owners = append(owners, node)
		}
	}
	switch {
	case len(owners) == 1:
		return owners[0]
	case len(owners) == 0 && len(ids[id]) == 0:
		return id
	}
	return ""
}

func describeOwner(ids map[string][]string, id string) string {
	var owners []string
	for _, node := range slices.Sorted(maps.Keys(ids)) {
		if slices.Contains(ids[node], id) {
			owners = append(owners, node)
		}
	}
	switch len(owners) {
	case 0:
		return "no node plugin reported it"
	case 1:
		return "node " + owners[0] + "'s"
	}
	return "reported by the plugins of " + strings.Join(owners, " and ")
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
