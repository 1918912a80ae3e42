package trace

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
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
}

// WriteHTML writes tl as one self-contained HTML page: a swim-lane per
// component with virtual time running down, API writes and CSI calls as
// arrows to the API server and the CSI plugins, steps, faults and data
// checks in their actor's lane, invariant violations across all lanes; a
// click on an entry shows its JSON Lines line (the object written, the CSI
// request's fields), and a filter shows only the entries of a claim, a pod
// or a volume. The same timeline always gives the same bytes.
func WriteHTML(w io.Writer, tl Timeline, opts HTMLOptions) error {
	data, err := pageDataJSON(tl, 0, opts)
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

// PageData is what a live page polls for: the lanes and the page's records
// of the entries after the first `after` (and the violations), as JSON.
func PageData(tl Timeline, after int) ([]byte, error) {
	return pageDataJSON(tl, after, HTMLOptions{})
}

// pageData is the page's view of a timeline.
type pageData struct {
	Title   string       `json:"title,omitempty"`
	Live    string       `json:"live,omitempty"`
	Lanes   []Lane       `json:"lanes"`
	Records []pageRecord `json:"records"`
}

// pageRecord is one row of the page: an entry or a violation.
type pageRecord struct {
	Seq    int    `json:"seq,omitempty"` // 0 for a violation
	AtText string `json:"atText"`
	Kind   Kind   `json:"kind"`
	Lane   string `json:"lane,omitempty"`   // the actor's lane; "" for a violation, which spans them all
	Target string `json:"target,omitempty"` // the lane an API write or CSI call goes to
	Label  string `json:"label"`
	Failed bool   `json:"failed,omitempty"`
	// Keys are the claims, pods and volumes the entry concerns
	// ("claim default/data", "pod default/app", "volume pvc-1"), for the
	// filter.
	Keys []string `json:"keys,omitempty"`
	// Line is the entry's JSON Lines line: what a click shows.
	Line json.RawMessage `json:"line"`
}

func pageDataJSON(tl Timeline, after int, opts HTMLOptions) ([]byte, error) {
	pd := pageData{Title: opts.Title, Live: opts.Live, Lanes: tl.lanes(), Records: []pageRecord{}}
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
				Label: tl.scrub(fmt.Sprintf("INVARIANT %s violated: %s", v.Invariant, v.Message)), Failed: true, Line: line})
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
		pd.Records = append(pd.Records, pageRecord{Seq: e.Seq, AtText: formatOffset(e.At), Kind: e.Kind, Lane: e.Actor,
			Target: target(e), Label: tl.scrub(pageLabel(e)), Failed: e.Err != "" || (e.Call != nil && e.Call.Code != 0), Keys: keys, Line: line})
		if err := addViolations(e.Seq); err != nil {
			return nil, err
		}
	}
	// encoding/json escapes <, > and &: the data cannot end the script
	// element it stands in.
	out, err := json.Marshal(pd)
	if err != nil {
		return nil, fmt.Errorf("the timeline page's data: %w", err)
	}
	return out, nil
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
