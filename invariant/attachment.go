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
// plugin identifies itself (NodeGetInfo's node ID). The VolumeAttachments
// are those the whole history shows, not only the ones written before the
// call: a backend that learns of writes through watches and an audit log
// (the real control plane) may record a write after the call it caused.
var attachMatches = Invariant{
	Name: "attach-matches-attachment",
	Doc:  "a volume is controller-published only to a node a VolumeAttachment of that volume names",
	Check: func(h *History) []Violation {
		if !hasWrites(h.Entries) {
			return nil // no objects in the history: nothing to compare with
		}
		// Every PV and VolumeAttachment the history shows (their
		// volume and node never change), and the CSI node IDs each
		// Kubernetes node's plugin answered NodeGetInfo with.
		vas := map[string]int{} // VolumeAttachment name -> its first write
		ids := map[string][]string{}
		for _, e := range h.Entries {
			// A write the API server refused (a conflict, a 429) has no
			// object, and a refused create not even a name: only
			// stored writes count.
			if e.Write != nil && e.Write.Object != nil && e.Write.Kind == "VolumeAttachment" && !e.Write.Removed && vas[e.Write.Name] == 0 {
				vas[e.Write.Name] = e.Seq
			}
			if c := e.Call; e.Verb == "NodeGetInfo" && c != nil && c.Code == 0 && c.Node != "" && c.NodeID != "" && !slices.Contains(ids[c.Node], c.NodeID) {
				ids[c.Node] = append(ids[c.Node], c.NodeID)
			}
		}
		all := allObjects(h.Entries)
		// The VolumeAttachments of each volume, by name.
		byVolume := map[string][]string{}
		for _, name := range slices.Sorted(maps.Keys(vas)) {
			if vol := attachedVolume(all, all.vas[name].Spec.Source); vol != "" {
				byVolume[vol] = append(byVolume[vol], name)
			}
		}
		var found []Violation
		for _, e := range okCalls(h.Entries) {
			if e.Verb != "ControllerPublishVolume" {
				continue
			}
			c := e.Call
			var named []string
			var seqs []int
			matched := false
			for _, name := range byVolume[c.Volume] {
				va := all.vas[name]
				if ownerOf(ids, c.NodeID) == va.Spec.NodeName {
					matched = true
					break
				}
				named = append(named, fmt.Sprintf("%s (node %s, #%d)", name, va.Spec.NodeName, vas[name]))
				seqs = append(seqs, vas[name])
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

// allObjects is every PV and VolumeAttachment the history shows, as last
// written before it was removed, if it was.
func allObjects(entries []trace.Entry) *objects {
	all := newObjects()
	for _, e := range entries {
		if e.Write == nil || e.Write.Removed {
			continue
		}
		all.apply(e)
	}
	return all
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
