package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/csisim/csisim/trace/htmltest"
	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// Every entry and violation, and where the three calls that took
	// virtual time were sent.
	if len(pd.Records) != len(sampleTimeline().Entries)+2+3 {
		t.Errorf("%d records in the page, want every entry and violation, and three calls' sending", len(pd.Records))
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
	var seqs []string
	for _, r := range pd.Records {
		seq := strconv.Itoa(r.Seq)
		if r.Sent {
			seq += fmt.Sprintf(" sent after #%d", r.After)
		}
		seqs = append(seqs, seq)
	}
	// #13 on (#13 took virtual time: where it was sent too), and the
	// violation placed at the end; the one at #12 the page has already.
	if want := []string{"13 sent after #10", "13", "14", "15", "16", "0"}; !slices.Equal(seqs, want) {
		t.Errorf("records after #12: %q, want %q", seqs, want)
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
	// (Record 3 is where #4 was sent, 4 its answer.) The pod that uses
	// the claim comes later too.
	if keys := strings.Join(allPD.Records[4].Keys, ","); allPD.Records[4].Seq != 4 || keys != "claim default/data,pod default/app,volume pvc-1" {
		t.Errorf("record #%d keys %q, want #4 with the claim, its volume and its pod", allPD.Records[4].Seq, keys)
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
	// A provisioned volume is named after its claim's UID; the claim's
	// pod comes with it.
	if got := strings.Join(rel.keys(Entry{Kind: CSI, Call: &CSICall{Name: "pvc-uid-claim"}}), ","); got != "claim default/data,pod default/app,volume pvc-uid-claim" {
		t.Errorf("keys of CreateVolume pvc-<claim UID> = %q", got)
	}
	// A fault the proxy fired names the call's volume handle; a node's
	// fault strikes the pods on it.
	if got := strings.Join(rel.keys(Entry{Kind: Fault, Actor: "faultproxy:node-1", Verb: "NodeStageVolume", Object: "vol-1"}), ","); got != "claim default/data,pod default/app,volume pvc-1" {
		t.Errorf("keys of a fault on vol-1 = %q", got)
	}
	if got := strings.Join(rel.keys(Entry{Kind: Fault, Actor: "scenario", Verb: "node-loss", Object: "Node node-1"}), ","); got != "pod default/app" {
		t.Errorf("keys of node-1's loss = %q", got)
	}
	// A publish's target path names its pod: that pod's only, not every
	// pod's that uses the claim.
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default", UID: "uid-other"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	rel.keys(Entry{Kind: API, Write: &APIWrite{Verb: "create", Kind: "Pod", Namespace: "default", Name: "other", Object: other}})
	if got := strings.Join(rel.keys(Entry{Kind: CSI, Call: &CSICall{Volume: "vol-1", TargetPath: "/k/pods/uid-other/volumes/kubernetes.io~csi/pvc-1/mount"}}), ","); got != "claim default/data,pod default/other,volume pvc-1" {
		t.Errorf("keys of other's NodePublishVolume = %q", got)
	}
	if got := strings.Join(rel.keys(Entry{Kind: CSI, Call: &CSICall{Volume: "vol-1", StagingPath: "/k/plugins/x/globalmount"}}), ","); got != "claim default/data,pod default/app,pod default/other,volume pvc-1" {
		t.Errorf("keys of a NodeStageVolume of the claim both pods use = %q", got)
	}
	for seq, want := range map[int]string{
		1:  "",
		2:  "claim default/data",
		4:  "volume pvc-1",
		5:  "claim default/data,volume pvc-1", // before the pod: nothing knows of it yet
		7:  "claim default/data,pod default/app",
		8:  "claim default/data,pod default/app,volume pvc-1",
		9:  "pod default/app",
		10: "claim default/data,pod default/app",
		12: "claim default/data,pod default/app,volume pvc-1", // only a volume handle in the call
		14: "claim default/data,pod default/app,volume pvc-1",
		15: "claim default/data,pod default/app",
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

	expectLanesAndOrder(t, doc, tl)
	var rows []*html.Node
	for _, r := range htmltest.All(doc, "row") {
		if !htmltest.HasAttr(r, "data-sent") {
			rows = append(rows, r)
		}
	}
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
	expectDerivedVerdict(t, doc)
	if htmltest.HasAttr(htmltest.ByID(doc, "detail"), "hidden") == false {
		t.Error("the detail panel shows with nothing chosen")
	}

}

// TestHTMLChosenInTheAddress: the address chooses a subject and an entry
// to show.
func TestHTMLChosenInTheAddress(t *testing.T) {
	htmltest.Chromium(t)
	file := filepath.Join(t.TempDir(), "timeline.html")
	if err := os.WriteFile(file, []byte(writePage(t, sampleTimeline(), HTMLOptions{Title: "sample"})), 0o644); err != nil {
		t.Fatal(err)
	}
	// Chosen in the address: the pod's entries, and #7 shown.
	doc := htmltest.DOM(t, "file://"+file+"#subject=pod%20default%2Fapp&seq=7", 0)
	// The pod's own entries, and those of its claim and volume: its
	// CSI calls too, which name only the volume handle.
	var shown []string
	for _, r := range htmltest.All(doc, "row") {
		if !htmltest.HasAttr(r, "hidden") {
			shown = append(shown, rowName(r))
		}
	}
	if want := strings.Fields("2 4-sent 4 5 6 7 8 9 12-sent 10 12 INVARIANT 14 15 INVARIANT"); !slices.Equal(shown, want) {
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
	if got := htmltest.Text(htmltest.ByID(doc, "count")); got != "13 of 18 entries" {
		t.Errorf("count %q", got)
	}
}

// expectLanesAndOrder checks the sample's page: its lanes, and every
// entry and violation in order.
func expectLanesAndOrder(t *testing.T, doc *html.Node, tl Timeline) {
	t.Helper()
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
	// Every entry and violation in order, and where a call that took
	// virtual time was sent after the entry it followed (#4 was sent
	// after #2, #12 after #9, #13 after #10).
	var order []string
	for _, r := range htmltest.All(doc, "row") {
		order = append(order, rowName(r))
	}
	if want := strings.Fields("1 2 4-sent 3 4 5 6 7 8 9 12-sent 10 13-sent 11 12 INVARIANT 13 14 15 16 INVARIANT"); !slices.Equal(order, want) {
		t.Errorf("rows %q, want %q", order, want)
	}
}

// expectDerivedVerdict checks the sample's verdict: not told it, the page
// finds the failed step and the violations itself.
func expectDerivedVerdict(t *testing.T, doc *html.Node) {
	t.Helper()
	if got := htmltest.Text(htmltest.ByID(doc, "verdict-status")); got != "FAILED" {
		t.Errorf("verdict %q, want FAILED: step #16 failed", got)
	}
	items := htmltest.Text(htmltest.ByID(doc, "verdict-items"))
	for _, want := range []string{"failing step: #16 STEP expect", "invariant violated: INVARIANT single-node violated", "invariant violated: INVARIANT nothing-leaked violated"} {
		if !strings.Contains(items, want) {
			t.Errorf("the verdict does not say %q:\n%s", want, items)
		}
	}
}

// rowName is a row as the tests list them: its entry's seq ("12"), with
// "-sent" for where a call was sent, or its kind for a violation.
func rowName(r *html.Node) string {
	switch {
	case htmltest.Attr(r, "data-kind") == "INVARIANT":
		return "INVARIANT"
	case htmltest.HasAttr(r, "data-sent"):
		return htmltest.Attr(r, "data-seq") + "-sent"
	}
	return htmltest.Attr(r, "data-seq")
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
