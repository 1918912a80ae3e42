package faultproxy

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// Capability says whether the driver has a capability the order checker
// depends on.
type Capability int

const (
	// CapabilityLearned takes the capability from the capability calls'
	// answers in the history; if there are none, the checks that depend
	// on it are skipped.
	CapabilityLearned Capability = iota
	// CapabilityPresent: the driver has it.
	CapabilityPresent
	// CapabilityAbsent: the driver lacks it.
	CapabilityAbsent
)

// Lifecycle is what the order checker assumes about the driver and the CO.
type Lifecycle struct {
	// StageUnstage is the node capability STAGE_UNSTAGE_VOLUME.
	StageUnstage Capability
	// PublishUnpublish is the controller capability
	// PUBLISH_UNPUBLISH_VOLUME.
	PublishUnpublish Capability
	// AttachNotRequired is a CSIDriver with attachRequired: false, for
	// which the CO never calls ControllerPublishVolume.
	AttachNotRequired bool
}

// ViolationKind names a breach of the CSI lifecycle order.
type ViolationKind string

const (
	// PublishBeforeStage: NodePublishVolume while the volume is not
	// staged on the node (at the staging path given), on a driver with
	// STAGE_UNSTAGE_VOLUME.
	PublishBeforeStage ViolationKind = "NodePublishBeforeNodeStage"
	// NodeBeforeAttach: NodeStageVolume (or, without staging,
	// NodePublishVolume) while the volume is not controller-published to
	// the node, on a driver with PUBLISH_UNPUBLISH_VOLUME that needs
	// attaching.
	NodeBeforeAttach ViolationKind = "NodeBeforeControllerPublish"
	// DeleteInUse: DeleteVolume while the volume is controller-published
	// to, staged on or published on some node.
	DeleteInUse ViolationKind = "DeleteVolumeWhileInUse"
	// DetachInUse: ControllerUnpublishVolume while the node still has
	// the volume staged or published.
	DetachInUse ViolationKind = "ControllerUnpublishBeforeNodeCleanup"
	// UnstagePublished: NodeUnstageVolume while the volume is still
	// published at some target on the node.
	UnstagePublished ViolationKind = "NodeUnstageWhilePublished"
)

// Violation is one breach of the lifecycle order.
type Violation struct {
	Kind     ViolationKind
	VolumeID string
	// NodeID is the node concerned; empty for DeleteInUse, which
	// concerns the volume everywhere.
	NodeID string
	// Call is the Seq of the call that came too early; Related are the
	// Seqs of the calls that left the volume in the state it conflicts
	// with (or that undid the state it needed).
	Call    int
	Related []int
	// Message says it all in a sentence, naming the calls by Seq.
	Message string
}

func (v Violation) String() string { return v.Message }

// Merge combines the histories of several proxies (say, one in front of the
// controller and one in front of each node) into one, ordered by the time
// the calls arrived and renumbered from 1, so that the order checker sees
// the whole lifecycle.
func Merge(histories ...[]Call) []Call {
	var all []Call
	for _, h := range histories {
		all = append(all, h...)
	}
	slices.SortStableFunc(all, func(a, b Call) int { return a.Start.Compare(b.Start) })
	for i := range all {
		all[i].Seq = i + 1
	}
	return all
}

// tri is a capability as far as the checker knows.
type tri int

const (
	unknown tri = iota
	yes
	no
)

// learn resolves a capability: as configured, or from the successful
// answers of method in the history.
func learn(c Capability, calls []Call, method, capability string) tri {
	switch c {
	case CapabilityPresent:
		return yes
	case CapabilityAbsent:
		return no
	}
	seen := false
	for _, call := range calls {
		if call.Method != method || call.Code != codes.OK {
			continue
		}
		if slices.Contains(call.Capabilities, capability) {
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

// CheckOrder reports where the calls break the order of the CSI volume
// lifecycle, volume by volume and node by node.
//
// A call is checked against the state when it arrived, and changes the
// state when it returned OK, so calls that overlap are judged as the CO
// knew things: a call sent before an earlier one had succeeded counts as
// too early. Failed calls change nothing, even if the driver did the work
// (an error injected after forwarding): what matters is what the CO was
// told. Node service calls whose node is unknown (no Config.NodeID, no
// NodeGetInfo seen) are never compared with controller calls.
func CheckOrder(calls []Call, lc Lifecycle) []Violation {
	stage := learn(lc.StageUnstage, calls, "NodeGetCapabilities", "STAGE_UNSTAGE_VOLUME")
	attach := learn(lc.PublishUnpublish, calls, "ControllerGetCapabilities", "PUBLISH_UNPUBLISH_VOLUME") == yes && !lc.AttachNotRequired

	type event struct {
		at    time.Time
		phase int // 0: result of a call that took time; 1: arrival; 2: result of an instant call
		call  *Call
	}
	var events []event
	for i := range calls {
		c := &calls[i]
		if c.VolumeID == "" {
			continue
		}
		events = append(events, event{c.Start, 1, c})
		if c.Code == codes.OK {
			// An instant call's result goes after every arrival at
			// that instant, its own included.
			phase := 0
			if c.Duration <= 0 {
				phase = 2
			}
			events = append(events, event{c.End(), phase, c})
		}
	}
	slices.SortStableFunc(events, func(a, b event) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.phase, b.phase), cmp.Compare(a.call.Seq, b.call.Seq))
	})

	ck := &checker{stage: stage, attach: attach, vols: map[string]map[string]*use{}}
	for _, e := range events {
		if e.phase == 1 {
			ck.check(e.call)
		} else {
			ck.apply(e.call)
		}
	}
	return ck.found
}

type checker struct {
	stage  tri
	attach bool
	// vols maps volume ID, then node ID, to the node's use of the volume.
	vols  map[string]map[string]*use
	found []Violation
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

func (ck *checker) report(kind ViolationKind, c *Call, node string, related []int, format string, args ...any) {
	ck.found = append(ck.found, Violation{
		Kind: kind, VolumeID: c.VolumeID, NodeID: node, Call: c.Seq, Related: related,
		Message: fmt.Sprintf(format, args...),
	})
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

// check judges a call by the state when it arrived.
func (ck *checker) check(c *Call) {
	vol, node := c.VolumeID, c.NodeID
	switch c.Method {
	case "NodePublishVolume":
		u := ck.use(vol, node)
		switch {
		case c.Ephemeral:
			// An inline ephemeral volume is published only: the CO
			// neither stages nor attaches it.
		case ck.stage == yes && u.staged == 0:
			ck.report(PublishBeforeStage, c, node, relatedOf(u.unstagedBy),
				"call #%d NodePublishVolume of volume %s on node %s (target %s) came before NodeStageVolume: the volume is not staged on that node%s, and the driver has STAGE_UNSTAGE_VOLUME",
				c.Seq, vol, nodeName(node), c.TargetPath, since(u.unstagedBy, "unstaged", "never staged"))
		case ck.stage == yes && c.StagingPath != "" && u.stagingPath != c.StagingPath:
			ck.report(PublishBeforeStage, c, node, []int{u.staged},
				"call #%d NodePublishVolume of volume %s on node %s names staging path %s, but the volume is staged at %s (call #%d)",
				c.Seq, vol, nodeName(node), c.StagingPath, u.stagingPath, u.staged)
		case ck.stage == no && ck.attach && node != "" && u.controllerPublished == 0:
			ck.report(NodeBeforeAttach, c, node, relatedOf(u.unpublishedBy),
				"call #%d NodePublishVolume of volume %s on node %s came before ControllerPublishVolume to that node: the volume is not controller-published there%s, and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
				c.Seq, vol, node, since(u.unpublishedBy, "unpublished", "never published"))
		}
	case "NodeStageVolume":
		u := ck.use(vol, node)
		if ck.attach && node != "" && u.controllerPublished == 0 {
			ck.report(NodeBeforeAttach, c, node, relatedOf(u.unpublishedBy),
				"call #%d NodeStageVolume of volume %s on node %s came before ControllerPublishVolume to that node: the volume is not controller-published there%s, and the driver has PUBLISH_UNPUBLISH_VOLUME and needs attaching",
				c.Seq, vol, node, since(u.unpublishedBy, "unpublished", "never published"))
		}
	case "NodeUnstageVolume":
		u := ck.use(vol, node)
		if len(u.targets) > 0 {
			targets, seqs := describeTargets(u.targets)
			ck.report(UnstagePublished, c, node, seqs,
				"call #%d NodeUnstageVolume of volume %s on node %s came while the volume is still published at %s; NodeUnpublishVolume must succeed first",
				c.Seq, vol, nodeName(node), targets)
		}
	case "ControllerUnpublishVolume":
		nodes := []string{node}
		if node == "" { // no node ID: from every node
			nodes = slices.Sorted(maps.Keys(ck.vols[vol]))
		}
		for _, n := range nodes {
			u := ck.use(vol, n)
			// A node the proxy could not name is not known to be
			// this one.
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
			ck.report(DetachInUse, c, n, seqs,
				"call #%d ControllerUnpublishVolume of volume %s from node %s came while the node still uses it: %s; NodeUnpublishVolume and NodeUnstageVolume must succeed first",
				c.Seq, vol, nodeName(n), strings.Join(held, ", "))
		}
	case "DeleteVolume":
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
			ck.report(DeleteInUse, c, "", seqs,
				"call #%d DeleteVolume of volume %s came while the volume is still in use: %s",
				c.Seq, vol, strings.Join(held, "; "))
		}
	}
}

func relatedOf(seq int) []int {
	if seq == 0 {
		return nil
	}
	return []int{seq}
}

// apply changes the state by a call that succeeded.
func (ck *checker) apply(c *Call) {
	vol, node := c.VolumeID, c.NodeID
	switch c.Method {
	case "ControllerPublishVolume":
		ck.use(vol, node).controllerPublished = c.Seq
	case "ControllerUnpublishVolume":
		nodes := []string{node}
		if node == "" {
			nodes = slices.Collect(maps.Keys(ck.vols[vol]))
		}
		for _, n := range nodes {
			u := ck.use(vol, n)
			u.controllerPublished, u.unpublishedBy = 0, c.Seq
		}
	case "NodeStageVolume":
		u := ck.use(vol, node)
		u.staged, u.stagingPath = c.Seq, c.StagingPath
	case "NodeUnstageVolume":
		// Unstaging another path leaves the staged one staged.
		if u := ck.use(vol, node); u.staged != 0 && (c.StagingPath == "" || c.StagingPath == u.stagingPath) {
			u.staged, u.stagingPath, u.unstagedBy = 0, "", c.Seq
		}
	case "NodePublishVolume":
		ck.use(vol, node).targets[c.TargetPath] = c.Seq
	case "NodeUnpublishVolume":
		delete(ck.use(vol, node).targets, c.TargetPath)
	case "DeleteVolume":
		delete(ck.vols, vol)
	}
}
