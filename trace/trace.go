// Package trace records what happens during a run — API writes, CSI calls and
// scenario steps — as one ordered timeline that a person can read and a test
// can assert on.
package trace

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Kind says which layer an entry comes from.
type Kind string

const (
	// API is a write accepted by the Kubernetes API server.
	API Kind = "API"
	// CSI is a completed gRPC call to a CSI driver.
	CSI Kind = "CSI"
	// Step is a scenario step starting, passing or failing.
	Step Kind = "STEP"
	// Fault is a fault injected into the run.
	Fault Kind = "FAULT"
	// Data is the built-in workload of a pod checking its volumes' data.
	Data Kind = "DATA"
)

// Entry is one line of the timeline.
type Entry struct {
	Seq    int           // position in the timeline, from 1
	At     time.Duration // time since the recorder started
	Kind   Kind
	Actor  string // who did it: "external-provisioner", "kubelet/node-1", "scenario"
	Verb   string // create/update/patch/delete; CSI method; step action
	Object string // "PersistentVolumeClaim default/data"; CSI volume ID
	Detail string // free text: phase, return code
	Err    string // non-empty when the action failed
	// Driver is the CSI driver a CSI entry's call went to, set only in a
	// cluster of several drivers: a cluster of one writes the timeline it
	// always wrote.
	Driver string
	// Wall is how long the action took in wall time, where that is known
	// (CSI calls); it varies from run to run, so Canonical leaves it out.
	Wall time.Duration

	// The structured data of the entry, for the invariant checker (one of
	// them, by Kind, where the recording side knows it). Neither String nor
	// Canonical prints them: the timeline reads the same with or without.
	Call  *CSICall   // a CSI entry's request and answer
	Write *APIWrite  // an API entry's object
	Check *DataCheck // a DATA entry's outcome
}

// String renders the entry as one timeline line.
func (e Entry) String() string {
	s := e.Canonical()
	if e.Wall > 0 {
		s += fmt.Sprintf("  (%s)", e.Wall)
	}
	return s
}

// Canonical renders the entry without what varies between runs of the same
// simulation (wall-clock durations): two runs with the same seed and inputs
// have the same canonical timeline.
func (e Entry) Canonical() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%9s  %-5s %-24s %-26s %s", formatOffset(e.At), e.Kind, e.Actor, e.Verb, e.Object)
	if e.Driver != "" {
		b.WriteString("  driver=")
		b.WriteString(e.Driver)
	}
	if e.Detail != "" {
		b.WriteString("  ")
		b.WriteString(e.Detail)
	}
	if e.Err != "" {
		b.WriteString("  ERROR: ")
		b.WriteString(e.Err)
	}
	return strings.TrimRight(b.String(), " ")
}

func formatOffset(d time.Duration) string {
	return fmt.Sprintf("+%.3fs", d.Seconds())
}

// Recorder collects entries in the order they are added. It is safe for
// concurrent use; the zero value is not usable, call New.
type Recorder struct {
	clock clock.PassiveClock
	start time.Time

	mu          sync.Mutex
	entries     []Entry
	subscribers []func(Entry)
	// pending are the actions begun and not yet ended (Begin), by the
	// order they began in.
	pending  map[*Pending]int
	nextPend int
}

// New returns a recorder whose offsets are measured on clk from now.
func New(clk clock.PassiveClock) *Recorder {
	return &Recorder{clock: clk, start: clk.Now()}
}

// Now is the offset from the recorder's start, on its clock: what the next
// entry's At would be. A CSI call notes it when it starts.
func (r *Recorder) Now() time.Duration { return r.clock.Since(r.start) }

// Add stamps e with its sequence number and time and appends it.
// Subscribers are called in order, under the recorder's lock, so they see
// entries exactly in timeline order; they must not call back into the recorder.
func (r *Recorder) Add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.add(e)
}

func (r *Recorder) add(e Entry) {
	e.Seq = len(r.entries) + 1
	e.At = r.clock.Since(r.start)
	r.entries = append(r.entries, e)
	for _, s := range r.subscribers {
		s(e)
	}
}

// Pending is an action that has begun and not yet ended: a CSI call sent
// and not answered.
type Pending struct {
	rec   *Recorder
	entry Entry
}

// Begin notes that the action e describes has begun (a CSI call is sent):
// until End, InFlight lists it, stamped with the time it began. It is no
// entry: the timeline, its sequence numbers and its subscribers are as
// they would be without it, so the text trace is the same with or without
// a Begin; only a page that shows the calls in flight uses it.
func (r *Recorder) Begin(e Entry) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.At = r.clock.Since(r.start)
	p := &Pending{rec: r, entry: e}
	if r.pending == nil {
		r.pending = map[*Pending]int{}
	}
	r.nextPend++
	r.pending[p] = r.nextPend
	return p
}

// End adds the action's entry, e, and takes it off InFlight, at once: a
// reader sees the action either in flight or ended, never both.
func (p *Pending) End(e Entry) {
	r := p.rec
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, p)
	r.add(e)
}

// InFlight are the actions begun and not ended, in the order they began,
// each as Begin was given it with At the time it began.
func (r *Recorder) InFlight() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight()
}

func (r *Recorder) inFlight() []Entry {
	ps := make([]*Pending, 0, len(r.pending))
	for p := range r.pending {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return r.pending[ps[i]] < r.pending[ps[j]] })
	out := make([]Entry, len(ps))
	for i, p := range ps {
		out[i] = p.entry
	}
	return out
}

// Snapshot is the timeline so far and the actions in flight, taken
// together.
func (r *Recorder) Snapshot() (entries, inFlight []Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries...), r.inFlight()
}

// Subscribe calls fn for every entry added from now on.
func (r *Recorder) Subscribe(fn func(Entry)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subscribers = append(r.subscribers, fn)
}

// Entries returns a copy of the timeline so far.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.entries...)
}

// CountUntil is the number of entries added at offset d or before.
func (r *Recorder) CountUntil(d time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sort.Search(len(r.entries), func(i int) bool { return r.entries[i].At > d })
}

// Len is the number of entries so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// Filter returns the entries of the given kind.
func (r *Recorder) Filter(kind Kind) []Entry {
	var out []Entry
	for _, e := range r.Entries() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// WriteTo prints the whole timeline, one entry per line.
func (r *Recorder) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, e := range r.Entries() {
		m, err := fmt.Fprintln(w, e.String())
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
