package invariant

import (
	"fmt"
	"maps"
	"slices"

	"github.com/csisim/csisim/trace"
)

// singleNode: a ReadWriteOnce (or ReadWriteOncePod) volume is used on one
// node at a time — neither controller-published to a second node nor
// published on a second node's targets while the first still has it.
var singleNode = Invariant{
	Name: "rwo-single-node",
	Doc:  "a ReadWriteOnce volume is never published on two nodes at once, nor controller-published to two nodes",
	Check: func(h *History) []Violation {
		objs := newObjects()
		// Per volume: CSI node ID -> target -> the NodePublishVolume's Seq;
		// and CSI node ID -> the ControllerPublishVolume's Seq.
		published := map[string]map[string]map[string]int{}
		attached := map[string]map[string]int{}
		var found []Violation
		for _, e := range h.Entries {
			objs.apply(e)
			c := e.Call
			if e.Kind != trace.CSI || c == nil || c.Code != 0 || c.Volume == "" {
				continue
			}
			node := c.NodeID
			if node == "" {
				node = c.Node
			}
			single := singleNodeMode(objs.pvOf(c.Volume), c.AccessMode)
			switch e.Verb {
			case "NodePublishVolume":
				if single {
					for _, other := range othersHolding(published[c.Volume], node) {
						found = append(found, Violation{
							Message: fmt.Sprintf("#%d NodePublishVolume of ReadWriteOnce volume %s on node %s while it is still published on node %s (%s) and not detached from it",
								e.Seq, c.Volume, node, other.name, seqList(other.seqs)),
							Entries: append([]int{e.Seq}, other.seqs...),
						})
					}
				}
				hold(published, c.Volume, node, c.TargetPath, e.Seq)
			case "NodeUnpublishVolume":
				delete(published[c.Volume][node], c.TargetPath)
			case "ControllerPublishVolume":
				nodes := attached[c.Volume]
				if nodes == nil {
					nodes = map[string]int{}
					attached[c.Volume] = nodes
				}
				if single {
					for _, other := range slices.Sorted(maps.Keys(nodes)) {
						if other != node {
							found = append(found, Violation{
								Message: fmt.Sprintf("#%d ControllerPublishVolume of ReadWriteOnce volume %s to node %s while it is still controller-published to node %s (#%d)",
									e.Seq, c.Volume, node, other, nodes[other]),
								Entries: []int{e.Seq, nodes[other]},
							})
						}
					}
				}
				nodes[node] = e.Seq
			case "ControllerUnpublishVolume":
				// Detached: the node can no longer reach the volume,
				// whatever its kubelet still thinks is mounted.
				if node == "" {
					delete(attached, c.Volume)
					delete(published, c.Volume)
				} else {
					delete(attached[c.Volume], node)
					delete(published[c.Volume], node)
				}
			case "DeleteVolume":
				delete(attached, c.Volume)
				delete(published, c.Volume)
			}
		}
		return found
	},
}

// ensure returns m[k], creating it if needed.
func ensure[V any](m map[string]map[string]V, k string) map[string]V {
	if m[k] == nil {
		m[k] = map[string]V{}
	}
	return m[k]
}

// hold records that holder (a node, a pod) has volume published at
// target, by call seq: held[volume][holder][target] = seq.
func hold(held map[string]map[string]map[string]int, volume, holder, target string, seq int) {
	ensure(ensure(held, volume), holder)[target] = seq
}

// holding is another holder of a volume, with the Seqs of the calls that
// gave it its targets.
type holding struct {
	name string
	seqs []int
}

// othersHolding lists the holders other than self that still have targets
// of the volume, by name.
func othersHolding(holders map[string]map[string]int, self string) []holding {
	var out []holding
	for _, other := range slices.Sorted(maps.Keys(holders)) {
		if other != self && len(holders[other]) > 0 {
			out = append(out, holding{other, slices.Sorted(maps.Values(holders[other]))})
		}
	}
	return out
}
