package invariant

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// callOrder: the CSI calls keep the order of the volume lifecycle, volume
// by volume and node by node (see checkOrder), except where Kubernetes
// breaks it on purpose (see forced).
var callOrder = Invariant{
	Name: "csi-call-order",
	Doc:  "CSI calls keep the lifecycle order per volume and node (no NodePublish before NodeStage, no ControllerUnpublish while staged, no DeleteVolume while published, ...)",
	Check: func(h *History) []Violation {
		var found []Violation
		down := nodesDown(h.Entries)
		noAttach := attachNotRequired(h)
		for _, v := range checkOrder(h.Entries, noAttach) {
			if forced(v, h.Entries, down) || forgotten(v, h.Entries) {
				continue
			}
			viol := Violation{Message: string(v.kind) + ": " + v.message, Entries: append([]int{v.call}, v.related...)}
			if v.kind == deleteInUse {
				note, upstream := forgottenNote(h.Entries, v.related, v.call)
				if upstream == "" && noAttach {
					note, upstream = unstageRaceNote(h.Entries, v.related)
				}
				viol.Message += note
				viol.KnownUpstream = upstream
			}
			found = append(found, viol)
		}
		return found
	},
}

// orderKind names a breach of the CSI lifecycle order.
type orderKind string

const (
	// publishBeforeStage: NodePublishVolume while the volume is not
	// staged on the node (at the staging path given), on a driver with
	// STAGE_UNSTAGE_VOLUME.
	publishBeforeStage orderKind = "NodePublishBeforeNodeStage"
	// nodeBeforeAttach: NodeStageVolume (or, without staging,
	// NodePublishVolume) while the volume is not controller-published to
	// the node, on a driver with PUBLISH_UNPUBLISH_VOLUME that needs
	// attaching.
	nodeBeforeAttach orderKind = "NodeBeforeControllerPublish"
	// deleteInUse: DeleteVolume while the volume is controller-published
	// to, staged on or published on some node.
	deleteInUse orderKind = "DeleteVolumeWhileInUse"
	// detachInUse: ControllerUnpublishVolume while the node still has
	// the volume staged or published.
	detachInUse orderKind = "ControllerUnpublishBeforeNodeCleanup"
	// unstagePublished: NodeUnstageVolume while the volume is still
	// published at some target on the node.
	unstagePublished orderKind = "NodeUnstageWhilePublished"
)

// orderViolation is one breach of the lifecycle order.
type orderViolation struct {
	kind orderKind
	// call is the Seq of the call that came too early; related are the
	// Seqs of the calls that left the volume in the state it conflicts
	// with (or that undid the state it needed).
	call    int
	related []int
	// message says it all in a sentence, naming the calls by Seq.
	message string
}

// forced: a detach or delete that the order forbids only because of what
// a node that was down at the time still had staged or published. The
// attach/detach controller detaches from an unhealthy node after
// maxWaitForUnmountDuration, or at once with the out-of-service taint,
// knowing the node cannot clean up: Kubernetes does this on purpose.
func forced(v orderViolation, entries []trace.Entry, down func(node string, seq int) bool) bool {
	if v.kind != detachInUse && v.kind != deleteInUse {
		return false
	}
	for _, seq := range v.related {
		c := entries[seq-1].Call
		if c == nil || c.Node == "" || !down(c.Node, v.call) {
			return false // controller-published, or in use on a live node
		}
	}
	return len(v.related) > 0
}

// forgotten: a detach the order forbids only because the node's kubelet
// restarted while the volume was still staged for pods already gone (its
// NodeUnstageVolume slow or failing): the real kubelet rebuilds its actual
// state from the pods' volume directories it finds on disk
// (pkg/kubelet/volumemanager/reconciler/reconstruct.go), so the restarted
// one no longer counts the volume in the node's status.volumesInUse
// (volume_manager.go GetVolumesInUse: the desired volumes and the attached
// ones it knows), and the attach/detach controller, seeing it not in use,
// detaches it. Kubernetes breaks the order itself here; a detach of a
// volume the node still reported in use is judged as any other.
func forgotten(v orderViolation, entries []trace.Entry) bool {
	return v.kind == detachInUse && allForgotten(entries, v.related, v.call)
}

// allForgotten says whether each of the node uses (NodeStageVolume,
// NodePublishVolume entries) was forgotten by its node's kubelet before
// timeline entry before: the kubelet restarted after the use and the
// node's last status before it no longer lists the volume in use.
func allForgotten(entries []trace.Entry, uses []int, before int) bool {
	for _, seq := range uses {
		c := entries[seq-1].Call
		if c == nil || c.Node == "" || !kubeletRestarted(entries, c.Node, seq, before) || reportedInUse(entries, c.Node, c.Volume, before) {
			return false
		}
	}
	return len(uses) > 0
}

// forgottenNote says, for a DeleteVolume (or a use left at the end) that
// only uses a restarted kubelet forgot make wrong, that Kubernetes did it:
// the violation stands — the driver was asked to delete a volume still
// staged on a node, and nothing on the node will ever undo that stage —
// but the report names its cause. A v1.37 kubelet rebuilds its state only
// from the pods' directories (kubernetes pkg/kubelet/volumemanager/
// reconciler/reconstruct_common.go, getVolumesFromPodDir), so a volume no
// pod directory names any more — a pod's block device link goes before its
// NodeUnpublishVolume (operation_generator.go, GenerateUnmapVolumeFunc:
// UnmapBlockVolume, then UnmapPodDevice), a pod's directory goes before
// its volume's NodeUnstageVolume — is neither unpublished nor unstaged, and
// leaves volumesInUse (kubernetes#121937; KEP-6058's
// CSIGlobalMountReconstruction, alpha in v1.38, finds such stagings). The
// note comes with the bug's name for the violation's KnownUpstream, so
// that the run is not failed for it; "", "" when some use was not
// forgotten so.
func forgottenNote(entries []trace.Entry, uses []int, before int) (note, upstream string) {
	if !allForgotten(entries, uses, before) {
		return "", ""
	}
	c := entries[uses[0]-1].Call
	return fmt.Sprintf(" — Kubernetes left it so, not the driver: the kubelet of node %s restarted (#%d) after it used the volume and no longer reports it in volumesInUse; "+
		"a v1.37 kubelet rebuilds its state only from its pods' directories, where nothing names the volume any more (%s)",
		c.Node, restartSeq(entries, c.Node, uses[0], before), kubeletForgets), kubeletForgets
}

// kubeletForgets is the upstream bug behind forgottenNote: a kubelet
// restarted after a lost NodeUnpublishVolume or during a NodeUnstageVolume
// of a raw block volume no longer knows the volume (kubernetes#121937).
const kubeletForgets = "kubernetes#121937"

// unstageRaceNote says, for a DeleteVolume that came while the volume was
// only staged somewhere (published nowhere) on a cluster whose drivers need
// no attach, that Kubernetes did it: nothing holds such a volume's deletion
// until its NodeUnstageVolume. The kubelet deletes a pod once its volumes
// are unpublished (podVolumesExist looks at the pod's own mounts, not at
// the device's staging), the PVC protection controller then lets the claim
// go, and the external-provisioner deletes the released volume — it waits
// only for VolumeAttachments, which such a volume never has. A slow or lost
// NodeUnstageVolume then comes after the DeleteVolume (kubernetes#94108,
// kubernetes#94745: closed without a fix; the fix proposed in #94737 was
// not merged). The violation stands, as a driver must cope with it (refuse
// the deletion with FAILED_PRECONDITION, or unstage a deleted volume), but
// the run is not failed for it. "", "" when some use is not a staging.
func unstageRaceNote(entries []trace.Entry, uses []int) (note, upstream string) {
	for _, seq := range uses {
		if e := entries[seq-1]; e.Call == nil || e.Verb != "NodeStageVolume" {
			return "", ""
		}
	}
	if len(uses) == 0 {
		return "", ""
	}
	return " — Kubernetes left it so, not the driver: the volume needs no attach, so nothing holds its deletion until the kubelet has unstaged it; " +
		"the pod went once unpublished, then its claim and volume, and DeleteVolume came before NodeUnstageVolume (" + unstageRace + ")", unstageRace
}

// unstageRace is the upstream bug behind unstageRaceNote.
const unstageRace = "kubernetes#94108"

// kubeletRestarted says whether node's kubelet restarted (a kubelet-restart
// fault) between timeline entries after and before.
func kubeletRestarted(entries []trace.Entry, node string, after, before int) bool {
	return restartSeq(entries, node, after, before) != 0
}

// restartSeq is the Seq of the first restart of node's kubelet (a
// kubelet-restart fault) between timeline entries after and before, 0 if
// none.
func restartSeq(entries []trace.Entry, node string, after, before int) int {
	for _, e := range entries[after:min(before-1, len(entries))] {
		if e.Kind == trace.Fault && e.Verb == string(fault.KubeletRestart) && e.Object == "Node "+node {
			return e.Seq
		}
	}
	return 0
}

// reportedInUse says whether the last write of node before timeline entry
// before listed the volume (by its handle) in status.volumesInUse, where
// the kubelet tells the attach/detach controller not to detach it.
func reportedInUse(entries []trace.Entry, node, handle string, before int) bool {
	for i := min(before-1, len(entries)) - 1; i >= 0; i-- {
		w := entries[i].Write
		if w == nil || w.Kind != "Node" || w.Name != node || w.Object == nil {
			continue
		}
		n, ok := w.Object.(*corev1.Node)
		if !ok || w.Removed {
			return false
		}
		return slices.ContainsFunc(n.Status.VolumesInUse, func(v corev1.UniqueVolumeName) bool {
			return strings.HasSuffix(string(v), "^"+handle)
		})
	}
	return false
}

// nodesDown returns a function that says whether a node was down (not
// Ready, or gone) at timeline entry seq, by the Node writes before it.
func nodesDown(entries []trace.Entry) func(node string, seq int) bool {
	type change struct {
		seq   int
		ready bool
	}
	history := map[string][]change{}
	for _, e := range entries {
		w := e.Write
		if w == nil || w.Kind != "Node" || w.Object == nil {
			continue // not a Node write, or one the API server refused
		}
		ready := false
		if n, ok := w.Object.(*corev1.Node); ok && !w.Removed {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status == corev1.ConditionTrue
				}
			}
		}
		history[w.Name] = append(history[w.Name], change{e.Seq, ready})
	}
	return func(node string, seq int) bool {
		changes := history[node]
		i := sort.Search(len(changes), func(i int) bool { return changes[i].seq >= seq })
		return i > 0 && !changes[i-1].ready
	}
}

// attachNotRequired: the run's CSIDrivers (as last written) all say
// attachRequired: false, so the CO never calls ControllerPublishVolume.
func attachNotRequired(h *History) bool {
	drivers := map[string]bool{} // name -> attachRequired
	for _, e := range h.Entries {
		if w := e.Write; w != nil && w.Kind == "CSIDriver" && !w.Removed {
			if d, ok := w.Object.(*storagev1.CSIDriver); ok {
				drivers[d.Name] = d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
			}
		}
	}
	for _, d := range h.End.CSIDrivers {
		drivers[d.Name] = d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
	}
	if len(drivers) == 0 {
		return false
	}
	for _, required := range drivers {
		if required {
			return false
		}
	}
	return true
}

// tri is a capability as far as the checker knows.
type tri int

const (
	unknown tri = iota
	yes
	no
)

// learned resolves a capability from the successful answers of method
// among the calls: unknown if there were none.
func learned(calls []*trace.Entry, method, capability string) tri {
	seen := false
	for _, e := range calls {
		if e.Verb != method || e.Call.Code != codes.OK {
			continue
		}
		if slices.Contains(e.Call.Capabilities, capability) {
			return yes
		}
		seen = true
	}
	if seen {
		return no
	}
	return unknown
}

// use is what one node does with one volume, as the CO was told: each field
// is the Seq of the successful call that made it so, 0 if not so.
type use struct {
	controllerPublished int
	staged              int
	stagingPath         string
	targets             map[string]int
	// unpublishedBy and unstagedBy remember the last undoing call, to
	// explain a violation that follows it.
	unpublishedBy, unstagedBy int
}

func (u *use) inUseOnNode() bool { return u.staged != 0 || len(u.targets) > 0 }

// checkOrder reports where the run's CSI calls break the order of the CSI
// volume lifecycle, volume by volume and node (CSI node ID) by node. The
// driver's capabilities are learned from the answers of its capability
// calls; while there are none, the checks that depend on them are
// skipped. attachNotRequired says the CO never calls
// ControllerPublishVolume (a CSIDriver with attachRequired: false).
//
// A call is checked against the state when it was sent, and changes the
// state when it returned OK, so calls that overlap are judged as the CO
// knew things: a call sent before an earlier one had succeeded counts as
// too early. The timeline says both by entry: a call was sent just after
// the last entry there was (its StartedAfter), and its answer came with
// its own entry, so this holds even when every call happened at the same
// virtual instant. Failed calls change nothing, even if the driver did the
// work (an error injected after forwarding): what matters is what the CO
// was told. Node service calls whose node ID is unknown are never compared
// with controller calls.
func checkOrder(entries []trace.Entry, attachNotRequired bool) []orderViolation {
	var calls []*trace.Entry
	for i := range entries {
		if e := &entries[i]; e.Kind == trace.CSI && e.Call != nil {
			calls = append(calls, e)
		}
	}
	stage := learned(calls, "NodeGetCapabilities", "STAGE_UNSTAGE_VOLUME")
	attach := learned(calls, "ControllerGetCapabilities", "PUBLISH_UNPUBLISH_VOLUME") == yes && !attachNotRequired

	// A call is sent at 2*StartedAfter+1, between two entries, and
	// answered at 2*Seq, with its own entry.
	type event struct {
		at   int
		sent bool
		e    *trace.Entry
	}
	var events []event
	for _, e := range calls {
		if e.Call.Volume == "" {
			continue
		}
		events = append(events, event{2*e.Call.StartedAfter + 1, true, e})
		if e.Call.Code == codes.OK {
			events = append(events, event{2 * e.Seq, false, e})
		}
	}
	slices.SortStableFunc(events, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.e.Seq, b.e.Seq))
	})

	ck := &checker{stage: stage, attach: attach, vols: map[string]map[string]*use{}, inline: inlineVolumes(entries)}
	for _, ev := range events {
		if ev.sent {
			ck.check(ev.e)
		} else {
			ck.apply(ev.e)
		}
	}
	return ck.found
}

type checker struct {
	stage  tri
	attach bool
	// inline are the pods' inline CSI volumes, by inlineKey.
	inline map[string]bool
	// vols maps volume ID, then node ID, to the node's use of the volume.
	vols  map[string]map[string]*use
	found []orderViolation
}

func (ck *checker) use(vol, node string) *use {
	nodes, ok := ck.vols[vol]
	if !ok {
		nodes = map[string]*use{}
		ck.vols[vol] = nodes
	}
	u, ok := nodes[node]
	if !ok {
		u = &use{targets: map[string]int{}}
		nodes[node] = u
	}
	return u
}

func (ck *checker) report(kind orderKind, e *trace.Entry, related []int, format string, args ...any) {
	ck.found = append(ck.found, orderViolation{kind: kind, call: e.Seq, related: related, message: fmt.Sprintf(format, args...)})
}

func nodeName(n string) string {
	if n == "" {
		return "(unknown node)"
	}
	return n
}

// since explains when a state ended: "(undone by call #n)" or "(never X)".
func since(by int, undo, never string) string {
	if by != 0 {
		return fmt.Sprintf(" (%s by call #%d)", undo, by)
	}
	return " (" + never + ")"
}

// describeTargets lists targets with the calls that published them, and
// those calls' Seqs.
func describeTargets(targets map[string]int) (string, []int) {
	var parts []string
	var seqs []int
	for _, t := range slices.Sorted(maps.Keys(targets)) {
		parts = append(parts, fmt.Sprintf("%s (call #%d)", t, targets[t]))
		seqs = append(seqs, targets[t])
	}
	return strings.Join(parts, ", "), seqs
}

// check judges a call by the state when it was sent.
func (ck *checker) check(e *trace.Entry) {
	c := e.Call
	vol, node := c.Volume, c.NodeID
	switch e.Verb {
	case "NodePublishVolume":
		ck.checkPublish(e)
	case "NodeStageVolume":
		u := ck.use(vol, node)
		if ck.attach && node != "" && u.controllerPublished == 0 {
			ck.report(nodeBeforeAttach, e, relatedOf(u.unpublishedBy),
				"call #%d NodeStageVolume of volume %s on node %s came before ControllerPublishVolume to that node: the volume is not controller-published there%s, and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
				e.Seq, vol, node, since(u.unpublishedBy, "unpublished", "never published"))
		}
	case "NodeUnstageVolume":
		u := ck.use(vol, node)
		if len(u.targets) > 0 {
			targets, seqs := describeTargets(u.targets)
			ck.report(unstagePublished, e, seqs,
				"call #%d NodeUnstageVolume of volume %s on node %s came while the volume is still published at %s; NodeUnpublishVolume must succeed first",
				e.Seq, vol, nodeName(node), targets)
		}
	case "ControllerUnpublishVolume":
		ck.checkDetach(e)
	case "DeleteVolume":
		ck.checkDelete(e)
	}
}

// checkPublish judges a NodePublishVolume.
func (ck *checker) checkPublish(e *trace.Entry) {
	c := e.Call
	vol, node := c.Volume, c.NodeID
	u := ck.use(vol, node)
	switch {
	case c.Ephemeral || ck.inline[inlineKeyOf(c.TargetPath)]:
		// An inline ephemeral volume is published only: the CO
		// neither stages nor attaches it. The volume context says so
		// (csi.storage.k8s.io/ephemeral) only for a driver with
		// podInfoOnMount; the pod's spec says so always.
	case ck.stage == yes && u.staged == 0:
		ck.report(publishBeforeStage, e, relatedOf(u.unstagedBy),
			"call #%d NodePublishVolume of volume %s on node %s (target %s) came before NodeStageVolume: the volume is not staged on that node%s, and the driver has STAGE_UNSTAGE_VOLUME",
			e.Seq, vol, nodeName(node), c.TargetPath, since(u.unstagedBy, "unstaged", "never staged"))
	case ck.stage == yes && c.StagingPath != "" && u.stagingPath != c.StagingPath:
		ck.report(publishBeforeStage, e, []int{u.staged},
			"call #%d NodePublishVolume of volume %s on node %s names staging path %s, but the volume is staged at %s (call #%d)",
			e.Seq, vol, nodeName(node), c.StagingPath, u.stagingPath, u.staged)
	case ck.stage == no && ck.attach && node != "" && u.controllerPublished == 0:
		ck.report(nodeBeforeAttach, e, relatedOf(u.unpublishedBy),
			"call #%d NodePublishVolume of volume %s on node %s came before ControllerPublishVolume to that node: the volume is not controller-published there%s, and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
			e.Seq, vol, node, since(u.unpublishedBy, "unpublished", "never published"))
	}
}

// checkDetach judges a ControllerUnpublishVolume: from its node, or with
// no node ID from every node.
func (ck *checker) checkDetach(e *trace.Entry) {
	vol, node := e.Call.Volume, e.Call.NodeID
	nodes := []string{node}
	if node == "" {
		nodes = slices.Sorted(maps.Keys(ck.vols[vol]))
	}
	for _, n := range nodes {
		u := ck.use(vol, n)
		// A node whose ID is unknown is not known to be this one.
		if (n == "" && node != "") || !u.inUseOnNode() {
			continue
		}
		var held []string
		var seqs []int
		if u.staged != 0 {
			held = append(held, fmt.Sprintf("staged at %s (call #%d)", u.stagingPath, u.staged))
			seqs = append(seqs, u.staged)
		}
		if len(u.targets) > 0 {
			targets, tseqs := describeTargets(u.targets)
			held = append(held, "published at "+targets)
			seqs = append(seqs, tseqs...)
		}
		ck.report(detachInUse, e, seqs,
			"call #%d ControllerUnpublishVolume of volume %s from node %s came while the node still uses it: %s; NodeUnpublishVolume and NodeUnstageVolume must succeed first",
			e.Seq, vol, nodeName(n), strings.Join(held, ", "))
	}
}

// checkDelete judges a DeleteVolume against the volume's use on every node.
//
// Unlike the other calls, a DeleteVolume is judged by what it did: only one
// that succeeded is a breach. One the driver refused (FAILED_PRECONDITION is
// the CSI spec's answer for a volume in use, after which the caller
// retries), or that never reached it, deleted nothing. external-provisioner's
// only guard against deleting a volume still in use is the volume's
// VolumeAttachment, looked up in its informer's cache; after an API server
// outage that informer may relist late, and the real provisioner then sends
// DeleteVolume for a volume still attached, or still staged on a node whose
// unstage is failing, as csisim's does. A driver that refuses it keeps the
// volume; one that deletes it is reported.
func (ck *checker) checkDelete(e *trace.Entry) {
	if e.Call.Code != codes.OK {
		return
	}
	vol := e.Call.Volume
	var held []string
	var seqs []int
	nodes := ck.vols[vol]
	for _, n := range slices.Sorted(maps.Keys(nodes)) {
		u := nodes[n]
		if u.controllerPublished != 0 {
			held = append(held, fmt.Sprintf("controller-published to %s (call #%d)", nodeName(n), u.controllerPublished))
			seqs = append(seqs, u.controllerPublished)
		}
		if u.staged != 0 {
			held = append(held, fmt.Sprintf("staged on %s at %s (call #%d)", nodeName(n), u.stagingPath, u.staged))
			seqs = append(seqs, u.staged)
		}
		if len(u.targets) > 0 {
			targets, tseqs := describeTargets(u.targets)
			held = append(held, fmt.Sprintf("published on %s at %s", nodeName(n), targets))
			seqs = append(seqs, tseqs...)
		}
	}
	if len(held) > 0 {
		ck.report(deleteInUse, e, seqs,
			"call #%d DeleteVolume of volume %s came while the volume is still in use: %s",
			e.Seq, vol, strings.Join(held, "; "))
	}
}

func relatedOf(seq int) []int {
	if seq == 0 {
		return nil
	}
	return []int{seq}
}

// apply changes the state by a call that succeeded.
func (ck *checker) apply(e *trace.Entry) {
	c := e.Call
	vol, node := c.Volume, c.NodeID
	switch e.Verb {
	case "ControllerPublishVolume":
		ck.use(vol, node).controllerPublished = e.Seq
	case "ControllerUnpublishVolume":
		nodes := []string{node}
		if node == "" {
			nodes = slices.Collect(maps.Keys(ck.vols[vol]))
		}
		for _, n := range nodes {
			u := ck.use(vol, n)
			u.controllerPublished, u.unpublishedBy = 0, e.Seq
		}
	case "NodeStageVolume":
		u := ck.use(vol, node)
		u.staged, u.stagingPath = e.Seq, c.StagingPath
	case "NodeUnstageVolume":
		// Unstaging another path leaves the staged one staged.
		if u := ck.use(vol, node); u.staged != 0 && (c.StagingPath == "" || c.StagingPath == u.stagingPath) {
			u.staged, u.stagingPath, u.unstagedBy = 0, "", e.Seq
		}
	case "NodePublishVolume":
		ck.use(vol, node).targets[c.TargetPath] = e.Seq
	case "NodeUnpublishVolume":
		delete(ck.use(vol, node).targets, c.TargetPath)
	case "DeleteVolume":
		delete(ck.vols, vol)
	}
}

// inlineVolumes are the inline CSI volumes of the pods written in the
// timeline, by inlineKey: a pod's spec is immutable, so any write of it
// tells.
func inlineVolumes(entries []trace.Entry) map[string]bool {
	out := map[string]bool{}
	for i := range entries {
		w := entries[i].Write
		if w == nil {
			continue
		}
		pod, ok := w.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.CSI != nil {
				out[inlineKey(string(pod.UID), v.Name)] = true
			}
		}
	}
	return out
}

func inlineKey(podUID, volume string) string { return podUID + "/" + volume }

// inlineKeyOf is the inlineKey of a NodePublishVolume's target path, which
// the kubelet makes <dir>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount
// (kubernetes pkg/volume/csi/csi_mounter.go, GetPath) with the pod volume's
// name for an inline volume; "" for another path.
func inlineKeyOf(target string) string {
	parts := strings.Split(target, "/")
	for i := len(parts) - 5; i >= 0; i-- {
		if parts[i] == "pods" && parts[i+2] == "volumes" && parts[i+3] == "kubernetes.io~csi" {
			return inlineKey(parts[i+1], parts[i+4])
		}
	}
	return ""
}
