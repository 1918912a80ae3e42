package invariant

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/trace"
)

// nothingLeaked: at the end, everything the run made is accounted for by
// the end state. "Left" means nothing in the end state accounts for it: a
// scenario may end with pods running, and those keep their volumes. A node
// that is gone or not Ready at the end keeps what it had (it cannot undo
// anything until it comes back), so its node-side state is not judged.
var nothingLeaked = Invariant{
	Name: "nothing-leaked",
	Doc:  "at the end nothing is left that the end state does not account for: stages, publishes, attachments, VolumeAttachments, mounts (volumes: no-leaked-volume)",
	Check: func(h *History) []Violation {
		if !h.End.Observed {
			return nil
		}
		l := replayLifecycle(h.Entries)
		end := newEndIndex(&h.End)
		var found []Violation
		add := func(seqs []int, format string, args ...any) {
			found = append(found, Violation{Message: fmt.Sprintf(format, args...), Entries: seqs})
		}
		for _, k := range slices.SortedFunc(maps.Keys(l.published), compareKeys) {
			seq := l.published[k]
			pod := podOfTarget(k.path)
			if !end.nodeUp(k.node) || (pod != "" && end.pods[pod] != nil) {
				continue
			}
			note, upstream := forgottenNote(h.Entries, []int{seq}, len(h.Entries)+1)
			add([]int{seq}, "volume %s is still published at %s on node %s (NodePublishVolume #%d), but its pod %s is gone%s%s",
				k.volume, k.path, k.node, seq, pod, lostUnpublish(h.Entries, k, seq), note)
			found[len(found)-1].KnownUpstream = upstream
		}
		for _, k := range slices.SortedFunc(maps.Keys(l.staged), compareKeys) {
			seq := l.staged[k]
			if !end.nodeUp(k.node) || end.usedOn(k.node, k.volume) || l.publishedOn(k.node, k.volume) ||
				forgottenStage(h.Entries, k, seq) {
				continue
			}
			add([]int{seq}, "volume %s is still staged at %s on node %s (NodeStageVolume #%d), but no pod there uses it", k.volume, k.path, k.node, seq)
		}
		for _, k := range slices.SortedFunc(maps.Keys(l.attached), compareKeys) {
			seq := l.attached[k]
			if end.attachmentFor(k.volume, k.node, l.nodeNames) {
				continue
			}
			add([]int{seq}, "volume %s is still controller-published to node ID %s (ControllerPublishVolume #%d), but no VolumeAttachment is left for it", k.volume, k.node, seq)
		}
		for _, va := range h.End.VolumeAttachments {
			pvName := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pvName = *va.Spec.Source.PersistentVolumeName
			}
			if va.DeletionTimestamp != nil || !end.nodeUp(va.Spec.NodeName) || end.pvUsedOn(va.Spec.NodeName, pvName) {
				continue
			}
			// A pod's migrated inline volume: the attachment names no PV.
			if spec := va.Spec.Source.InlineVolumeSpec; spec != nil && spec.CSI != nil {
				if end.inlineUsedOn(va.Spec.NodeName, spec.CSI.VolumeHandle) {
					continue
				}
				pvName = spec.CSI.VolumeHandle
			}
			add(nil, "VolumeAttachment %s (volume %s, node %s) is left, but no pod on the node uses the volume and the node does not report it in use", va.Name, pvName, va.Spec.NodeName)
		}
		if h.End.MountsKnown {
			for _, m := range h.End.Mounts {
				if l.accountsForMount(m) || end.podMount(m) || kubeletOwnVolume(m) {
					continue
				}
				msg := fmt.Sprintf("%s is still mounted, but no volume is staged or published there", m)
				var seqs []int
				if seq, verb := l.lastUndo(m); seq != 0 {
					msg += fmt.Sprintf(" (%s #%d answered OK)", verb, seq)
					seqs = []int{seq}
				}
				add(seqs, "%s", msg)
			}
		}
		return found
	},
}

// forgottenStage: a staging the node's kubelet forgot when it restarted —
// a kubelet-restart after the stage, and the restarted kubelet no longer
// lists the volume in the node's volumesInUse. The real kubelet rebuilds
// its state from the pods' volume directories (reconstruct.go), so a
// device staged for pods already gone, whose NodeUnstageVolume the restart
// cut off, is never unstaged: Kubernetes leaves it (seen on a real v1.37.2
// kubelet, library/kubelet-restart-during-unstage.yaml), and csi-call-order
// lets its detach pass for the same reason (forgotten).
func forgottenStage(entries []trace.Entry, k useKey, seq int) bool {
	return kubeletRestarted(entries, k.node, seq, len(entries)+1) && !reportedInUse(entries, k.node, k.volume, len(entries)+1)
}

// lostUnpublish says, of a publish left, that a NodeUnpublishVolume of its
// target after it reached the driver, which answered OK, but its answer
// was lost (a FAULT entry carrying the driver's answer): the driver has
// undone it, its caller never heard so. "" if none did.
func lostUnpublish(entries []trace.Entry, k useKey, seq int) string {
	for _, e := range entries[min(seq, len(entries)):] {
		c := e.Call
		if e.Kind == trace.Fault && e.Verb == "NodeUnpublishVolume" && c != nil && c.Code == codes.OK && c.TargetPath == k.path && c.Volume == k.volume {
			return fmt.Sprintf(" (the driver answered OK to a NodeUnpublishVolume of it, #%d, but the answer was lost: the caller never heard)", e.Seq)
		}
	}
	return ""
}

// useKey is one use of a volume: where (node, path) and which volume.
type useKey struct{ volume, node, path string }

func compareKeys(a, b useKey) int {
	return strings.Compare(a.volume+"\x00"+a.node+"\x00"+a.path, b.volume+"\x00"+b.node+"\x00"+b.path)
}

// lifecycle is what the successful calls left: each use with the Seq of
// the call that made it.
type lifecycle struct {
	staged    map[useKey]int // NodeStageVolume, by node and staging path
	published map[useKey]int // NodePublishVolume, by node and target
	attached  map[useKey]int // ControllerPublishVolume, by CSI node ID
	// nodeNames maps a CSI node ID to its Kubernetes node.
	nodeNames map[string]string
	// undone maps a path to the last call that said it was unstaged or
	// unpublished.
	undone map[string]undo
}

type undo struct {
	seq  int
	verb string
}

func replayLifecycle(entries []trace.Entry) *lifecycle {
	l := &lifecycle{staged: map[useKey]int{}, published: map[useKey]int{},
		attached: map[useKey]int{}, nodeNames: map[string]string{}, undone: map[string]undo{}}
	for _, e := range okCalls(entries) {
		c := e.Call
		if c.Node != "" && c.NodeID != "" {
			l.nodeNames[c.NodeID] = c.Node
		}
		switch e.Verb {
		case "NodeStageVolume":
			l.staged[useKey{c.Volume, nodeOf(c), c.StagingPath}] = e.Seq
		case "NodeUnstageVolume":
			delete(l.staged, useKey{c.Volume, nodeOf(c), c.StagingPath})
			l.undone[c.StagingPath] = undo{e.Seq, e.Verb}
		case "NodePublishVolume":
			l.published[useKey{c.Volume, nodeOf(c), c.TargetPath}] = e.Seq
		case "NodeUnpublishVolume":
			delete(l.published, useKey{c.Volume, nodeOf(c), c.TargetPath})
			l.undone[c.TargetPath] = undo{e.Seq, e.Verb}
		case "ControllerPublishVolume":
			l.attached[useKey{volume: c.Volume, node: c.NodeID}] = e.Seq
		case "ControllerUnpublishVolume":
			for k := range l.attached {
				if k.volume == c.Volume && (c.NodeID == "" || k.node == c.NodeID) {
					delete(l.attached, k)
				}
			}
		}
	}
	return l
}

func (l *lifecycle) publishedOn(node, volume string) bool {
	for k := range l.published {
		if k.node == node && k.volume == volume {
			return true
		}
	}
	return false
}

// accountsForMount: m is a path still staged or published, or lies in one
// (a block volume's device file is mounted below its publish directory).
func (l *lifecycle) accountsForMount(m string) bool {
	for _, uses := range []map[useKey]int{l.staged, l.published} {
		for k := range uses {
			if k.path != "" && (m == k.path || strings.HasPrefix(m, k.path+"/") || strings.HasPrefix(k.path, m+"/")) {
				return true
			}
		}
	}
	return false
}

// lastUndo is the last call that said m was unstaged or unpublished.
func (l *lifecycle) lastUndo(m string) (int, string) {
	u := l.undone[m]
	return u.seq, u.verb
}

// endIndex looks things up in the end state.
type endIndex struct {
	pvByHandle map[string]*corev1.PersistentVolume
	pvs        map[string]*corev1.PersistentVolume
	claims     map[string]*corev1.PersistentVolumeClaim
	pods       map[string]*corev1.Pod // by UID
	nodes      map[string]*corev1.Node
	end        *EndState
}

func newEndIndex(s *EndState) *endIndex {
	x := &endIndex{pvByHandle: map[string]*corev1.PersistentVolume{}, pvs: map[string]*corev1.PersistentVolume{},
		claims: map[string]*corev1.PersistentVolumeClaim{}, pods: map[string]*corev1.Pod{}, nodes: map[string]*corev1.Node{}, end: s}
	for i := range s.PersistentVolumes {
		pv := &s.PersistentVolumes[i]
		if csiPV := migration.CSIPV(pv); csiPV != nil {
			pv = csiPV // as the components see an in-tree volume that migrated
		}
		x.pvs[pv.Name] = pv
		if pv.Spec.CSI != nil {
			x.pvByHandle[pv.Spec.CSI.VolumeHandle] = pv
		}
	}
	for i := range s.PersistentVolumeClaims {
		c := &s.PersistentVolumeClaims[i]
		x.claims[c.Namespace+"/"+c.Name] = c
	}
	for i := range s.Pods {
		x.pods[string(s.Pods[i].UID)] = &s.Pods[i]
	}
	for i := range s.Nodes {
		x.nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	return x
}

// nodeUp: the node exists and is Ready; a node known only by an unknown
// name ("") is not judged.
func (x *endIndex) nodeUp(name string) bool {
	n := x.nodes[name]
	if n == nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pvUsedOn: a pod on the node has a claim bound to PV pvName, or the node
// reports the volume in use (its kubelet has not unmounted it yet).
func (x *endIndex) pvUsedOn(node, pvName string) bool {
	pv := x.pvs[pvName]
	if pv == nil {
		return false
	}
	if pv.Spec.CSI != nil {
		if n := x.nodes[node]; n != nil {
			for _, u := range n.Status.VolumesInUse {
				if strings.HasSuffix(string(u), "^"+pv.Spec.CSI.VolumeHandle) {
					return true
				}
			}
		}
	}
	for _, p := range x.pods {
		if p.Spec.NodeName != node {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if c := x.claims[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]; c != nil && c.Spec.VolumeName == pvName {
				return true
			}
		}
	}
	return false
}

// usedOn is pvUsedOn for a CSI volume handle, or inlineUsedOn.
func (x *endIndex) usedOn(node, handle string) bool {
	if pv := x.pvByHandle[handle]; pv != nil && x.pvUsedOn(node, pv.Name) {
		return true
	}
	return x.inlineUsedOn(node, handle)
}

// inlineUsedOn: a pod on the node has an inline in-tree volume of a
// migrated plugin whose translated volume is handle, or the node reports
// that volume in use.
func (x *endIndex) inlineUsedOn(node, handle string) bool {
	if n := x.nodes[node]; n != nil && slices.ContainsFunc(n.Status.VolumesInUse, func(u corev1.UniqueVolumeName) bool {
		return strings.HasSuffix(string(u), "^"+handle)
	}) {
		return true
	}
	for _, p := range x.pods {
		if p.Spec.NodeName != node {
			continue
		}
		for i := range p.Spec.Volumes {
			pv, migrated, err := migration.Inline(&p.Spec.Volumes[i], p.Namespace)
			if migrated && err == nil && pv.Spec.CSI.VolumeHandle == handle {
				return true
			}
		}
	}
	return false
}

// attachmentFor: a VolumeAttachment in the end state is for the volume
// and the node with CSI node ID nodeID.
func (x *endIndex) attachmentFor(handle, nodeID string, nodeNames map[string]string) bool {
	pv := x.pvByHandle[handle]
	node := nodeNames[nodeID]
	if node == "" {
		node = nodeID
	}
	for _, va := range x.end.VolumeAttachments {
		if va.Spec.NodeName != node {
			continue
		}
		if src := va.Spec.Source; (src.PersistentVolumeName != nil && pv != nil && *src.PersistentVolumeName == pv.Name) ||
			(src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil && src.InlineVolumeSpec.CSI.VolumeHandle == handle) {
			return true
		}
	}
	return false
}

// podMount: a mount of the kubelet's own for a pod still there (a block
// volume's device, mapped into a path named by the pod's UID).
func (x *endIndex) podMount(m string) bool {
	for _, part := range strings.Split(m, "/") {
		if x.pods[part] != nil {
			return true
		}
	}
	return false
}

// kubeletOwnVolume says whether a mount is one of a real kubelet's own
// volume plugins (a projected service-account token, an emptyDir, a
// secret: .../volumes/kubernetes.io~projected/...), not a CSI volume's:
// what the CSI lifecycle leaves is judged, not the kubelet's tmpfs mounts,
// which it keeps for the pods of a node that is down.
func kubeletOwnVolume(mount string) bool {
	_, rest, ok := strings.Cut(mount, "/volumes/kubernetes.io~")
	return ok && !strings.HasPrefix(rest, "csi/")
}
