package trace

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/csisim/csisim/trace/htmltest"
	"golang.org/x/net/html"
)

func writePage(t *testing.T, tl Timeline, opts HTMLOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, tl, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestHTMLIsSelfContained(t *testing.T) {
	page := writePage(t, sampleTimeline(), HTMLOptions{Title: "basic-lifecycle, seed 1"})
	// Nothing the page would fetch: no external script, style, image or
	// font, no address to load.
	for _, re := range []string{`(?i)<script[^>]+src=`, `(?i)<link`, `(?i)<img`, `(?i)@import`, `(?i)url\(`, `(?i)https?://`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("the page refers to something outside it: %q", m)
		}
	}
	if again := writePage(t, sampleTimeline(), HTMLOptions{Title: "basic-lifecycle, seed 1"}); again != page {
		t.Error("the same timeline gave two different pages")
	}
}

// The page's data and title cannot end the script element or inject
// markup, whatever the objects hold.
func TestHTMLEscapes(t *testing.T) {
	page := writePage(t, sampleTimeline(), HTMLOptions{Title: `</title><script>alert(1)</script>`})
	if strings.Count(page, "</script>") != 2 || strings.Contains(page, "<script>alert") {
		t.Errorf("the page's scripts were broken into:\n%s", page)
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	data := htmltest.ByID(doc, "timeline-data")
	if data == nil {
		t.Fatal("no timeline-data element")
	}
	var pd pageData
	if err := json.Unmarshal([]byte(htmltest.Text(data)), &pd); err != nil {
		t.Fatalf("the embedded data is not JSON: %v", err)
	}
	if len(pd.Records) != len(sampleTimeline().Entries)+2 {
		t.Errorf("%d records in the page, want every entry and violation", len(pd.Records))
	}
}

func TestPageDataAfter(t *testing.T) {
	tl := sampleTimeline()
	out, err := PageData(tl, 12)
	if err != nil {
		t.Fatal(err)
	}
	var pd pageData
	if err := json.Unmarshal(out, &pd); err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, r := range pd.Records {
		seqs = append(seqs, r.Seq)
	}
	// #13 on, and the violation placed at the end; the one at #12 the
	// page has already.
	if want := []int{13, 14, 15, 16, 0}; !slices.Equal(seqs, want) {
		t.Errorf("records after #12: %v, want %v", seqs, want)
	}
	// The page knows what later entries tell: #4's volume is the claim's.
	all, err := PageData(tl, 0)
	if err != nil {
		t.Fatal(err)
	}
	var allPD pageData
	if err := json.Unmarshal(all, &allPD); err != nil {
		t.Fatal(err)
	}
	if keys := strings.Join(allPD.Records[3].Keys, ","); allPD.Records[3].Seq != 4 || keys != "claim default/data,volume pvc-1" {
		t.Errorf("record #%d keys %q, want #4 with the claim and its volume", allPD.Records[3].Seq, keys)
	}
	if len(pd.Lanes) != len(tl.lanes()) {
		t.Errorf("%d lanes, want all %d", len(pd.Lanes), len(tl.lanes()))
	}
}

func TestRelationKeys(t *testing.T) {
	tl := sampleTimeline()
	rel := newRelations()
	got := map[int]string{}
	for _, e := range tl.Entries {
		got[e.Seq] = strings.Join(rel.keys(e), ",")
	}
	// A provisioned volume is named after its claim's UID.
	if got := strings.Join(rel.keys(Entry{Kind: CSI, Call: &CSICall{Name: "pvc-uid-claim"}}), ","); got != "claim default/data,volume pvc-uid-claim" {
		t.Errorf("keys of CreateVolume pvc-<claim UID> = %q", got)
	}
	for seq, want := range map[int]string{
		1:  "",
		2:  "claim default/data",
		4:  "volume pvc-1",
		5:  "claim default/data,volume pvc-1",
		7:  "claim default/data,pod default/app",
		8:  "claim default/data,volume pvc-1",
		9:  "pod default/app",
		10: "claim default/data",
		12: "claim default/data,volume pvc-1", // only a volume handle in the call
		14: "claim default/data,pod default/app,volume pvc-1",
		15: "claim default/data",
	} {
		if got[seq] != want {
			t.Errorf("keys of #%d = %q, want %q", seq, got[seq], want)
		}
	}
}

// TestHTMLInChromium renders the page and checks what its script built:
// the lanes, one row per entry in its lane with arrows to the API server
// and the CSI plugins, the violations, the filter and the detail of an
// entry chosen in the address.
func TestHTMLInChromium(t *testing.T) {
	htmltest.Chromium(t)
	tl := sampleTimeline()
	file := filepath.Join(t.TempDir(), "timeline.html")
	if err := os.WriteFile(file, []byte(writePage(t, tl, HTMLOptions{Title: "sample"})), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := htmltest.DOM(t, "file://"+file, 0)

	var lanes []string
	for _, h := range htmltest.All(doc, "lane-head") {
		lanes = append(lanes, htmltest.Text(h))
	}
	var want []string
	for _, l := range tl.lanes() {
		want = append(want, l.Title)
	}
	if !slices.Equal(lanes, want) {
		t.Errorf("lane heads %q, want %q", lanes, want)
	}
	rows := htmltest.All(doc, "row")
	if len(rows) != len(tl.Entries)+len(tl.Violations) {
		t.Fatalf("%d rows, want %d", len(rows), len(tl.Entries)+len(tl.Violations))
	}
	bySeq := map[string]*html.Node{}
	var violations []*html.Node
	for _, r := range rows {
		if htmltest.Attr(r, "data-kind") == "INVARIANT" {
			violations = append(violations, r)
			continue
		}
		bySeq[htmltest.Attr(r, "data-seq")] = r
		if htmltest.HasAttr(r, "hidden") {
			t.Errorf("row #%s is hidden without a filter", htmltest.Attr(r, "data-seq"))
		}
	}
	entry := func(r *html.Node) *html.Node { return htmltest.All(r, "entry")[0] }
	for _, tt := range []struct {
		seq, kind, lane, target string
		column                  string // the grid columns: "4", "2 / 13"
		classes                 []string
	}{
		// Lane columns start at 2: scenario is 2, the API server 3,
		// the controller plugin 13, node-1's plugin 14; notes run to
		// the end.
		{"1", "STEP", "scenario", "", "2 / 15", []string{"kind-STEP", "note"}},
		{"2", "API", "scenario", "kube-apiserver", "2 / 4", []string{"kind-API", "msg", "ltr"}},
		{"4", "CSI", "external-provisioner", "csi-controller", "5 / 14", []string{"kind-CSI", "msg"}},
		{"11", "FAULT", "fault-injector", "", "9 / 15", []string{"kind-FAULT", "note"}},
		{"12", "CSI", "kubelet:node-1", "csi-node/node-1", "10 / 15", []string{"kind-CSI", "msg", "failed"}},
		{"14", "DATA", "workload/default/app", "", "11 / 15", []string{"kind-DATA", "note"}},
	} {
		r := bySeq[tt.seq]
		if r == nil {
			t.Errorf("no row for #%s", tt.seq)
			continue
		}
		if k, l, tg := htmltest.Attr(r, "data-kind"), htmltest.Attr(r, "data-lane"), htmltest.Attr(r, "data-target"); k != tt.kind || l != tt.lane || tg != tt.target {
			t.Errorf("row #%s: kind %q lane %q target %q, want %q %q %q", tt.seq, k, l, tg, tt.kind, tt.lane, tt.target)
		}
		e := entry(r)
		for _, c := range tt.classes {
			if !htmltest.HasClass(e, c) {
				t.Errorf("entry #%s has classes %q, want %s among them", tt.seq, htmltest.Attr(e, "class"), c)
			}
		}
		if got := gridColumns(htmltest.Attr(e, "style")); got != tt.column {
			t.Errorf("entry #%s in columns %q, want %s", tt.seq, got, tt.column)
		}
		if !strings.HasPrefix(htmltest.Text(e), "#"+tt.seq+" ") {
			t.Errorf("entry #%s reads %q", tt.seq, htmltest.Text(e))
		}
	}
	if len(violations) != 2 || !strings.Contains(htmltest.Text(violations[0]), "INVARIANT single-node violated: volume vol-1 staged on node-1 while #4; <bad>") ||
		gridColumns(htmltest.Attr(entry(violations[0]), "style")) != "2 / 15" {
		t.Errorf("violations not across the lanes as they should be")
	}
	// The violation of #12 comes right after it.
	for i, r := range rows {
		if htmltest.Attr(r, "data-seq") == "12" && htmltest.Attr(rows[i+1], "data-kind") != "INVARIANT" {
			t.Error("the violation at #12 is not the row after it")
		}
	}
	if got := htmltest.Text(htmltest.ByID(doc, "count")); got != "18 of 18 entries" {
		t.Errorf("count %q", got)
	}
	var subjects []string
	for d := range htmltest.ByID(doc, "subject").Descendants() {
		if d.Type == html.ElementNode && d.Data == "option" {
			subjects = append(subjects, htmltest.Attr(d, "value"))
		}
	}
	if want := []string{"", "claim default/data", "pod default/app", "volume pvc-1"}; !slices.Equal(subjects, want) {
		t.Errorf("the filter offers %q, want %q", subjects, want)
	}
	if htmltest.HasAttr(htmltest.ByID(doc, "detail"), "hidden") == false {
		t.Error("the detail panel shows with nothing chosen")
	}

	// Chosen in the address: the pod's entries, and #7 shown.
	doc = htmltest.DOM(t, "file://"+file+"#subject=pod%20default%2Fapp&seq=7", 0)
	var shown []string
	for _, r := range htmltest.All(doc, "row") {
		if !htmltest.HasAttr(r, "hidden") {
			shown = append(shown, htmltest.Attr(r, "data-seq")+htmltest.Attr(r, "data-kind"))
		}
	}
	if want := []string{"7API", "9API", "INVARIANT", "14DATA", "INVARIANT"}; !slices.Equal(shown, want) {
		t.Errorf("with the pod chosen, rows %q show, want %q", shown, want)
	}
	detail := htmltest.ByID(doc, "detail")
	if htmltest.HasAttr(detail, "hidden") {
		t.Fatal("the detail of #7 is not shown")
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(htmltest.Text(htmltest.ByID(doc, "detail-json"))), &line); err != nil {
		t.Fatalf("the detail is not the entry's JSON: %v", err)
	}
	obj, _ := line["write"].(map[string]any)["object"].(map[string]any)
	if line["seq"] != 7.0 || obj["kind"] != "Pod" {
		t.Errorf("the detail shows %v, want entry #7 and its Pod", line)
	}
	if got := htmltest.Text(htmltest.ByID(doc, "count")); got != "5 of 18 entries" {
		t.Errorf("count %q", got)
	}
}

// gridColumns are the grid columns of an element's style as Chromium
// writes it ("grid-area: 3 / 2 / auto / 13;"): "2 / 13", or "2" for one.
func gridColumns(style string) string {
	m := regexp.MustCompile(`grid-area: \d+ / (\d+)(?: / auto / (\d+))?;`).FindStringSubmatch(style)
	switch {
	case m == nil:
		return "none in " + style
	case m[2] == "":
		return m[1]
	}
	return m[1] + " / " + m[2]
}
