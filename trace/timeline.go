package trace

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Timeline is what the timeline formats (JSON Lines, Mermaid, HTML) show:
// a run's entries and the invariant violations found in them.
type Timeline struct {
	Entries []Entry
	// Violations are the broken invariants, in the order the checker
	// found them. The formats place each at the last entry it names.
	Violations []Violation
	// Root, if set, is the run's own temporary directory (the kubelets'
	// and plugins' paths are under it): the formats write it as RootWord,
	// so that two runs of the same seed write the same bytes.
	Root string
	// InFlight are the CSI calls sent and not answered when the entries
	// were taken (Recorder.Snapshot): a live cluster's. They are no
	// entries; each has its Call's Started and StartedAfter. A finished
	// run has none: its calls that hung ended when it closed.
	InFlight []Entry
	// StartUp is how many of the first entries are the cluster's own
	// start-up, before anyone used it; 0 if unknown, and then the
	// entries before the first scenario step are.
	StartUp int
}

// StepsSpan says where a scenario's steps are in entries: first is the
// index of the first step entry, end the number of entries up to and with
// the last one. What comes before first is the cluster's start-up; what
// comes after end, the run's clean-up and the cluster's shutdown (a call
// that hung ends there, cut off, not answered). Without step entries the
// span is all of entries.
func StepsSpan(entries []Entry) (first, end int) {
	first, end = -1, len(entries)
	for i, e := range entries {
		if e.Kind == Step && e.Actor == "scenario" {
			if first < 0 {
				first = i
			}
			end = i + 1
		}
	}
	if first < 0 {
		return 0, len(entries)
	}
	return first, end
}

// InFlightAt are the CSI calls of entries in flight at a point of them:
// after the first n entries, at offset at (no earlier than the n-th's):
// sent before it — within the first n entries, or after them but before
// at — and answered after it. Each is its answer's entry.
func InFlightAt(entries []Entry, n int, at time.Duration) []Entry {
	var out []Entry
	for _, e := range entries[min(n, len(entries)):] {
		if e.Kind == CSI && e.Call != nil && (e.Call.StartedAfter < n || e.Call.Started < at) {
			out = append(out, e)
		}
	}
	return out
}

// RootWord stands for the run's directory in the formats, as {root} stands
// for it in `csisim run --driver-command`.
const RootWord = "{root}"

// scrub is s with the run's directory written as RootWord.
func (tl Timeline) scrub(s string) string {
	if tl.Root == "" {
		return s
	}
	return strings.ReplaceAll(s, tl.Root, RootWord)
}

// Violation is a broken invariant as the formats show it: package
// invariant's Violation, which this package cannot import (it imports
// trace).
type Violation struct {
	Invariant string // the invariant's kebab-case name
	Message   string // what happened, naming entries by their Seq (#n)
	Entries   []int  // the Seqs of the entries that break it
	// KnownUpstream names the known Kubernetes bug that caused it
	// ("kubernetes#121937"): no failure, and the formats say so.
	KnownUpstream string
}

// Label is how the formats title a violation: "INVARIANT name violated:
// message", or for a known upstream bug's, "KNOWN  bug: INVARIANT ...".
func (v Violation) Label() string {
	label := fmt.Sprintf("INVARIANT %s violated: %s", v.Invariant, v.Message)
	if v.KnownUpstream != "" {
		label = "KNOWN  " + v.KnownUpstream + ": " + label
	}
	return label
}

// ViolationKind is the kind the formats give a violation's line: it is no
// entry of the recorder's, but it reads like one.
const ViolationKind Kind = "INVARIANT"

// at is where a violation stands on the time axis: at the last entry it
// names, else at the end of the run.
func (tl Timeline) violationAt(v Violation) Entry {
	last := 0
	for _, seq := range v.Entries {
		if seq >= 1 && seq <= len(tl.Entries) && tl.Entries[seq-1].Seq == seq {
			last = max(last, seq)
		}
	}
	if last > 0 {
		return tl.Entries[last-1]
	}
	if n := len(tl.Entries); n > 0 {
		return tl.Entries[n-1]
	}
	return Entry{}
}

// Lane is one component's row (HTML) or participant (Mermaid): the actor
// of the entries, or a CSI plugin or the API server they talk to.
type Lane struct {
	ID    string `json:"id"`    // the actor as the entries name it, or one of the lane names below
	Title string `json:"title"` // what the lane is called on the page
}

// The lanes that are no actor: what API writes and CSI calls are sent to.
const (
	APIServerLane = "kube-apiserver"
	// CSI plugin lanes are "csi-controller" and "csi-node/<node>".
	csiControllerLane = "csi-controller"
	csiNodeLanePrefix = "csi-node/"
)

// csiLane is the plugin a CSI call went to: the node plugin of the call's
// node for the calls a kubelet made, else the controller plugin (also for
// a node service call a sidecar made to the controller's socket).
func csiLane(e Entry) string {
	if e.Call != nil {
		if e.Call.Node != "" {
			return csiNodeLanePrefix + e.Call.Node
		}
		return csiControllerLane
	}
	// An entry without its call's data (one read from an older trace):
	// a kubelet's calls go to its node's plugin.
	if node, ok := strings.CutPrefix(e.Actor, "kubelet:"); ok {
		return csiNodeLanePrefix + node
	}
	return csiControllerLane
}

// lanes are the timeline's lanes in a stable order: the scenario first,
// then the API server, then the other actors in the order they first
// appear, then the CSI plugins (controller, then nodes by name): API writes
// point left, CSI calls right.
func (tl Timeline) lanes() []Lane {
	var actors []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			actors = append(actors, a)
		}
	}
	var plugins []string
	for _, e := range tl.Entries {
		add(e.Actor)
		if e.Kind == CSI {
			if p := csiLane(e); !slices.Contains(plugins, p) {
				plugins = append(plugins, p)
			}
		}
	}
	add(APIServerLane)
	rank := func(a string) int {
		switch a {
		case "scenario", "csisim fault": // they drive the run
			return 0
		case APIServerLane:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(actors, func(a, b string) int { return rank(a) - rank(b) })
	slices.SortFunc(plugins, func(a, b string) int {
		if a == csiControllerLane {
			return -1
		}
		if b == csiControllerLane {
			return 1
		}
		return strings.Compare(a, b)
	})
	var out []Lane
	for _, a := range actors {
		title := a
		switch a {
		case "":
			title = "(unknown)"
		case APIServerLane:
			title = "API server"
		}
		out = append(out, Lane{ID: a, Title: title})
	}
	for _, p := range plugins {
		if seen[p] {
			continue
		}
		title := "CSI controller plugin"
		if node, ok := strings.CutPrefix(p, csiNodeLanePrefix); ok {
			title = "CSI node plugin " + node
		}
		out = append(out, Lane{ID: p, Title: title})
	}
	return out
}

// target is the lane an entry's arrow points to, "" for none: API writes
// go to the API server, CSI calls to their plugin.
func target(e Entry) string {
	switch e.Kind {
	case API:
		return APIServerLane
	case CSI:
		return csiLane(e)
	}
	return ""
}
