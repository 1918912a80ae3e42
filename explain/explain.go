package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Finding is one link of an explanation: an object, the state it is in,
// why, and what would move it on.
type Finding struct {
	Object Ref
	// State is the object's state in a few words: "Pending", "Terminating",
	// "attached to node-a".
	State string
	// Why says, in csisim's words, why the object is in that state.
	Why string
	// Said quotes what the components reported about it (events,
	// conditions, attach errors), the latest first.
	Said []Said
	// Next is what would move it on — a fix, or what it waits for and when
	// that comes; empty if nothing is to be done.
	Next string
	// Due is when a component will move it on by itself (a forced detach),
	// if that is known; zero otherwise.
	Due time.Time
}

// Said is a component's own report, quoted.
type Said struct {
	Component string // "default-scheduler", "kubelet", "external-attacher"
	Reason    string // an event's reason or condition's
	Message   string
	Count     int32     // how many times an event was counted; 0 if not an event
	Last      time.Time // when it was last said; zero if unknown
}

// Explanation is the chain of findings from the object asked about to the
// cause; the first finding is about the object itself.
type Explanation struct {
	Target   Ref
	Now      time.Time
	Findings []Finding
}

// Explain follows the chain from target through s. It fails only when
// target is not in s (then it says when it was removed, if s knows).
func Explain(s *Snapshot, target Ref) (*Explanation, error) {
	ix := newIndex(s)
	w := &walker{ix: ix, seen: map[Ref]bool{}}
	if !w.exists(target) {
		for _, g := range s.Gone {
			if g.Ref == target {
				return nil, fmt.Errorf("%s does not exist: it was removed %s", target, ix.ago(g.At))
			}
		}
		return nil, fmt.Errorf("%s not found", target)
	}
	w.explain(target)
	return &Explanation{Target: target, Now: s.Now, Findings: w.findings}, nil
}

// maxFindings bounds a chain: past that, the story is not one chain.
const maxFindings = 12

// walker collects findings, each object once.
type walker struct {
	ix       *index
	seen     map[Ref]bool
	findings []Finding
}

func (w *walker) exists(r Ref) bool {
	k := key(r.Namespace, r.Name)
	switch r.Kind {
	case KindPod:
		return w.ix.pods[k] != nil
	case KindClaim:
		return w.ix.claims[k] != nil
	case KindVolume:
		return w.ix.volumes[r.Name] != nil
	case KindAttachment:
		return w.ix.attachments[r.Name] != nil
	case KindNode:
		return w.ix.nodes[r.Name] != nil
	case KindVolumeSnapshot:
		return w.ix.snapshots[k] != nil
	}
	return false
}

// explain adds the findings about r and what it leads to, once per object.
func (w *walker) explain(r Ref) {
	if w.seen[r] || len(w.findings) >= maxFindings {
		return
	}
	w.seen[r] = true
	k := key(r.Namespace, r.Name)
	switch r.Kind {
	case KindPod:
		if p := w.ix.pods[k]; p != nil {
			w.pod(p)
		}
	case KindClaim:
		if c := w.ix.claims[k]; c != nil {
			w.claim(c)
		}
	case KindVolume:
		if pv := w.ix.volumes[r.Name]; pv != nil {
			w.volume(pv)
		}
	case KindAttachment:
		if va := w.ix.attachments[r.Name]; va != nil {
			w.attachment(va)
		}
	case KindNode:
		if n := w.ix.nodes[r.Name]; n != nil {
			w.node(n)
		}
	case KindVolumeSnapshot:
		if vs := w.ix.snapshots[k]; vs != nil {
			w.volumeSnapshot(vs)
		}
	}
}

// add appends a finding and returns its index, for findings filled in
// after the links below them are known.
func (w *walker) add(f Finding) int {
	// What was quoted already, by an earlier link or this one, is not
	// quoted again.
	var kept []Said
	for _, s := range f.Said {
		sameMessage := func(t Said) bool { return t.Message == s.Message }
		if slices.ContainsFunc(kept, sameMessage) || slices.ContainsFunc(w.findings, func(g Finding) bool { return slices.ContainsFunc(g.Said, sameMessage) }) {
			continue
		}
		kept = append(kept, s)
	}
	f.Said = kept
	w.findings = append(w.findings, f)
	return len(w.findings) - 1
}

// said turns an event into a quote.
func said(e *event) Said {
	return Said{Component: e.Source, Reason: e.Reason, Message: e.Message, Count: e.Count, Last: e.Last}
}

// ago says how long before now t was: "3m10s ago"; "at an unknown time"
// for a zero t.
func (ix *index) ago(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	d := ix.now.Sub(t)
	if d < 0 {
		return "in " + roundDuration(-d)
	}
	return roundDuration(d) + " ago"
}

// in says how long after now t is: "in 2m50s", or "2m50s ago" for a past t.
func (ix *index) in(t time.Time) string {
	d := t.Sub(ix.now)
	if d < 0 {
		return roundDuration(-d) + " ago"
	}
	return "in " + roundDuration(d)
}

func roundDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return d.Round(time.Second).String()
}

// String renders the explanation as a numbered chain.
func (e *Explanation) String() string {
	var b strings.Builder
	_, _ = e.WriteTo(&b)
	return b.String()
}

// WriteTo prints the chain: each finding's object and state, why, what
// the components said and what comes next.
func (e *Explanation) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	for i, f := range e.Findings {
		fmt.Fprintf(&b, "%d. %s: %s\n", i+1, f.Object, f.State)
		if f.Why != "" {
			writeWrapped(&b, "   ", f.Why)
		}
		for _, s := range f.Said {
			line := s.Component
			if line == "" {
				line = "(unknown component)"
			}
			if s.Reason != "" {
				line += " " + s.Reason
			}
			var notes []string
			if s.Count > 1 {
				notes = append(notes, fmt.Sprintf("%d times", s.Count))
			}
			if !s.Last.IsZero() && !e.Now.IsZero() {
				ix := index{now: e.Now}
				notes = append(notes, "last "+ix.ago(s.Last))
			}
			if len(notes) > 0 {
				line += " (" + strings.Join(notes, ", ") + ")"
			}
			writeWrapped(&b, "   ", line+": "+s.Message)
		}
		if f.Next != "" {
			writeWrapped(&b, "   ", "Next: "+f.Next)
		}
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// writeWrapped writes text after prefix; continuation lines are indented
// two more spaces. Lines are kept whole: messages are quoted verbatim.
func writeWrapped(b *strings.Builder, prefix, text string) {
	for i, line := range strings.Split(text, "\n") {
		if i == 0 {
			b.WriteString(prefix + line + "\n")
		} else {
			b.WriteString(prefix + "  " + line + "\n")
		}
	}
}

// Cause is the last finding: where the chain ends.
func (e *Explanation) Cause() *Finding {
	if len(e.Findings) == 0 {
		return nil
	}
	return &e.Findings[len(e.Findings)-1]
}
