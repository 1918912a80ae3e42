package trace

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
)

// The page's template, style and script, embedded so that a written page
// needs nothing from the network.
var (
	//go:embed html/timeline.html.tmpl
	pageTemplateText string
	//go:embed html/timeline.css
	pageCSS string
	//go:embed html/timeline.js
	pageJS string
)

var pageTemplate = template.Must(template.New("timeline").Parse(pageTemplateText))

// HTMLOptions say what the page is about and where it gets more entries.
type HTMLOptions struct {
	// Title heads the page: the scenario and the seed, say.
	Title string
	// Live, if set, is the URL of a PageData endpoint the page polls for
	// the entries after those it has: a cluster still running. Empty for
	// a finished run's page, which holds everything.
	Live string
	// Verdict is how the run ended, if it has; the page heads its lanes
	// with it.
	Verdict *Verdict
}

// Verdict is how a finished run ended, as the page's head says it. The
// failing step, the violations and the calls still in flight at the end
// the page finds in the timeline.
type Verdict struct {
	Passed bool `json:"passed"`
	// Summary is the outcome in one line: "13 steps passed, 20s of
	// cluster time; 8 invariants held", or the failure.
	Summary string `json:"summary"`
}

// WriteHTML writes tl as one self-contained HTML page: the verdict first
// (how the run ended, the failing step, the invariants broken, the calls
// left hanging), then a swim-lane per component with virtual time running
// down, API writes and CSI calls as arrows to the API server and the CSI
// plugins (a call that took virtual time, or never returned, also where
// it was sent), steps, faults and data checks in their actor's lane,
// invariant violations across all lanes. The cluster's start-up and what
// came after the steps are folded. A click on an entry shows its JSON
// Lines line (the object written, the CSI request's fields), and a filter
// shows only the entries of a claim, a pod or a volume. The same timeline
// always gives the same bytes.
func WriteHTML(w io.Writer, tl Timeline, opts HTMLOptions) error {
	data, err := pageDataJSON(tl, 0, opts, opts.Live != "")
	if err != nil {
		return err
	}
	title := opts.Title
	if title == "" {
		title = "csisim timeline"
	}
	err = pageTemplate.Execute(w, struct {
		Title string
		CSS   template.CSS
		JS    template.JS
		Data  template.JS
	}{title, template.CSS(pageCSS), template.JS(pageJS), template.JS(data)})
	if err != nil {
		return fmt.Errorf("writing the HTML timeline: %w", err)
	}
	return nil
}

// PageData is what a live page polls for: the lanes, the page's records
// of the entries after the first `after` (and the violations), and the
// calls in flight, as JSON.
func PageData(tl Timeline, after int) ([]byte, error) {
	return pageDataJSON(tl, after, HTMLOptions{}, true)
}

// pageData is the page's view of a timeline.
type pageData struct {
	Title   string       `json:"title,omitempty"`
	Live    string       `json:"live,omitempty"`
	Verdict *Verdict     `json:"verdict,omitempty"`
	Lanes   []Lane       `json:"lanes"`
	Records []pageRecord `json:"records"`
	// StartUp: entries #1 to #StartUp are the cluster's own start-up,
	// folded. StepsEnd, on a finished run's page: the entries after
	// #StepsEnd came after the steps (clean-up, shutdown), folded too.
	StartUp  int `json:"startUp,omitempty"`
	StepsEnd int `json:"stepsEnd,omitempty"`
	// InFlight are the calls sent and not answered (a live page's): all
	// of them, each poll.
	InFlight []pageRecord `json:"inFlight,omitempty"`
}

// pageRecord is one row of the page: an entry, a violation, or where a
// call was sent.
type pageRecord struct {
	Seq    int    `json:"seq,omitempty"` // 0 for a violation and a call in flight
	AtText string `json:"atText"`
	Kind   Kind   `json:"kind"`
	Lane   string `json:"lane,omitempty"`   // the actor's lane; "" for a violation, which spans them all
	Target string `json:"target,omitempty"` // the lane an API write or CSI call goes to
	Label  string `json:"label"`
	Failed bool   `json:"failed,omitempty"`
	// Sent: the row is where a CSI call was sent, not where it was
	// answered (entry #Seq, if it was): a call that took virtual time or
	// is still in flight. The page places it after entry #After.
	Sent  bool `json:"sent,omitempty"`
	After int  `json:"after,omitempty"`
	// CutOff: the call was still in flight when the steps ended; its
	// answer is the cluster's shutdown.
	CutOff bool `json:"cutOff,omitempty"`
	// Keys are the claims, pods and volumes the entry concerns
	// ("claim default/data", "pod default/app", "volume pvc-1"), for the
	// filter.
	Keys []string `json:"keys,omitempty"`
	// Line is the entry's JSON Lines line: what a click shows.
	Line json.RawMessage `json:"line"`
}

// pageDataJSON is the page's data: for a live page (live), of a cluster
// still running, whose last entries are no shutdown.
func pageDataJSON(tl Timeline, after int, opts HTMLOptions, live bool) ([]byte, error) {
	pd := pageData{Title: opts.Title, Live: opts.Live, Verdict: opts.Verdict, Lanes: tl.lanes(), Records: []pageRecord{}}
	first, stepsEnd := StepsSpan(tl.Entries)
	pd.StartUp = first
	if tl.StartUp > 0 {
		pd.StartUp = min(tl.StartUp, len(tl.Entries))
	}
	if !live && stepsEnd < len(tl.Entries) {
		pd.StepsEnd = stepsEnd
	}
	// The relations an entry shows serve the entries before it too: a
	// first pass learns them all.
	rel := newRelations()
	for _, e := range tl.Entries {
		rel.keys(e)
	}
	violationsAfter := map[int][]Violation{}
	for _, v := range tl.Violations {
		seq := tl.violationAt(v).Seq
		violationsAfter[seq] = append(violationsAfter[seq], v)
	}
	addViolations := func(seq int) error {
		for _, v := range violationsAfter[seq] {
			line, err := tl.violationJSON(v)
			if err != nil {
				return err
			}
			pd.Records = append(pd.Records, pageRecord{AtText: formatOffset(tl.violationAt(v).At), Kind: ViolationKind,
				Label: tl.scrub(v.Label()), Failed: v.KnownUpstream == "", Line: line})
		}
		return nil
	}
	if after == 0 {
		if err := addViolations(0); err != nil {
			return nil, err
		}
	}
	for i, e := range tl.Entries {
		// Every entry feeds the relations, also those the page has.
		keys := rel.keys(e)
		if i < after {
			continue
		}
		line, err := tl.entryJSON(e)
		if err != nil {
			return nil, err
		}
		r := pageRecord{Seq: e.Seq, AtText: formatOffset(e.At), Kind: e.Kind, Lane: e.Actor, Target: target(e),
			Label: tl.scrub(pageLabel(e)), Failed: e.Err != "" || (e.Call != nil && e.Call.Code != 0), Keys: keys, Line: line}
		if sent, ok := tl.sentRecord(e, r, pd.StepsEnd); ok {
			r.Label += fmt.Sprintf(" (sent at %s)", formatOffset(e.Call.Started))
			pd.Records = append(pd.Records, sent)
		}
		pd.Records = append(pd.Records, r)
		if err := addViolations(e.Seq); err != nil {
			return nil, err
		}
	}
	for _, e := range tl.InFlight {
		line, err := tl.entryJSON(e)
		if err != nil {
			return nil, err
		}
		r := pageRecord{AtText: formatOffset(e.At), Kind: e.Kind, Lane: e.Actor, Target: target(e), Sent: true,
			Label: tl.scrub(fmt.Sprintf("%s %s: sent at %s, in flight", e.Verb, e.Object, formatOffset(e.At))), Keys: rel.keys(e), Line: line}
		if e.Call != nil {
			r.After = e.Call.StartedAfter
		}
		pd.InFlight = append(pd.InFlight, r)
	}
	// encoding/json escapes <, > and &: the data cannot end the script
	// element it stands in.
	out, err := json.Marshal(pd)
	if err != nil {
		return nil, fmt.Errorf("the timeline page's data: %w", err)
	}
	return out, nil
}

// sentRecord is the row of where a CSI call was sent, for a call that
// took virtual time (a hang, a delay) while other entries came or, on a
// finished run's page, was still in flight when the steps ended
// (stepsEnd > 0): answered is the row of its answer.
func (tl Timeline) sentRecord(e Entry, answered pageRecord, stepsEnd int) (pageRecord, bool) {
	c := e.Call
	if e.Kind != CSI || c == nil {
		return pageRecord{}, false
	}
	cutOff := stepsEnd > 0 && e.Seq > stepsEnd && c.StartedAfter < stepsEnd
	// Where it was sent is worth a row if time passed and other entries
	// came meanwhile: else it is the row before its answer.
	tookTime := c.Started < e.At && c.StartedAfter < e.Seq-1
	if !tookTime && !cutOff {
		return pageRecord{}, false
	}
	r := answered
	r.Sent, r.After, r.CutOff, r.Failed = true, c.StartedAfter, cutOff, false
	r.AtText = formatOffset(c.Started)
	what := strings.TrimSpace(e.Verb + " " + e.Object)
	if cutOff {
		r.Label = fmt.Sprintf("#%d %s: sent at %s, still in flight when the steps ended; the cluster's shutdown cut it off", e.Seq, what, r.AtText)
	} else {
		r.Label = fmt.Sprintf("#%d %s: sent at %s, answered %s later", e.Seq, what, r.AtText, e.At-c.Started)
	}
	r.Label = tl.scrub(r.Label)
	return r, true
}

// sortedKeys is a set's members in order.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
