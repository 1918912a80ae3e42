package trace

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csisim/csisim/trace/htmltest"
	"golang.org/x/net/html"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// hungRun is a run that fails waiting for a pod whose NodeStageVolume
// hangs: the cluster's start-up (#1-#3), the steps (#4-#12), and after
// them the hung call, cut off by the shutdown, and an event it caused
// (#13, #14).
func hungRun() Timeline {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "uid-claim"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-app"},
		Spec: corev1.PodSpec{NodeName: "node-1", Volumes: []corev1.Volume{{Name: "v",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "vol-1"}}}}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.1", Namespace: "default"}, Reason: "FailedMount",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "app"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	write := func(obj runtime.Object, kind, ns, name string) *APIWrite {
		return &APIWrite{Verb: "create", Kind: kind, Namespace: ns, Name: name, Object: obj}
	}
	s := time.Second
	entries := []Entry{
		{Kind: API, Actor: "kube-apiserver", Verb: "create", Object: "Namespace default"},
		{Kind: API, Actor: "kubelet:node-1", Verb: "create", Object: "Node node-1", Write: write(node, "Node", "", "node-1")},
		{Kind: CSI, Actor: "kubelet:node-1", Verb: "NodeGetInfo", Detail: "OK", Call: &CSICall{Node: "node-1", StartedAfter: 2}},
		{Kind: Step, Actor: "scenario", Verb: "apply", Object: "claim and pod", Detail: "step 1/2 started"},
		{Kind: API, Actor: "scenario", Verb: "create", Object: "PersistentVolumeClaim default/data", Write: write(claim, "PersistentVolumeClaim", "default", "data")},
		{Kind: API, Actor: "scenario", Verb: "create", Object: "Pod default/app", Write: write(pod, "Pod", "default", "app")},
		{Kind: Step, Actor: "scenario", Verb: "apply", Object: "claim and pod", Detail: "step 1 passed"},
		{Kind: Step, Actor: "scenario", Verb: "wait", Object: "wait pod/app", Detail: "step 2/2 started"},
		{At: 2 * s, Kind: API, Actor: "external-provisioner", Verb: "create", Object: "PersistentVolume pvc-1", Write: write(pv, "PersistentVolume", "", "pvc-1")},
		{At: 10 * s, Kind: Fault, Actor: "faultproxy:node-1", Verb: "NodeStageVolume", Object: "vol-1", Detail: "rule NodeStageVolume hang"},
		{At: 20 * s, Kind: API, Actor: "kubelet:node-1", Verb: "update", Object: "Lease kube-node-lease/node-1"},
		{At: 60 * s, Kind: Step, Actor: "scenario", Verb: "wait", Object: "wait pod/app", Detail: "step 2 failed after 1m0s", Err: "timed out"},
		{At: 60 * s, Kind: CSI, Actor: "kubelet:node-1", Verb: "NodeStageVolume", Object: "vol-1", Detail: "Canceled", Err: "grpc: the client connection is closing",
			Call: &CSICall{Node: "node-1", Volume: "vol-1", StagingPath: "/k/plugins/d/globalmount", Code: codes.Canceled, StartedAfter: 9, Started: 10 * s}},
		{At: 60 * s, Kind: API, Actor: "kubelet:node-1", Verb: "create", Object: "Event for Pod default/app", Write: write(event, "Event", "default", "app.1")},
	}
	for i := range entries {
		entries[i].Seq = i + 1
	}
	return Timeline{Entries: entries}
}

func writePageFile(t *testing.T, tl Timeline, opts HTMLOptions, extra string) string {
	t.Helper()
	page := writePage(t, tl, opts)
	if extra != "" {
		page = strings.Replace(page, "</body>", extra+"</body>", 1)
	}
	file := filepath.Join(t.TempDir(), "timeline.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + file
}

func TestStepsSpanAndInFlightAt(t *testing.T) {
	tl := hungRun()
	if first, end := StepsSpan(tl.Entries); first != 3 || end != 12 {
		t.Errorf("StepsSpan = %d, %d; want the steps from index 3 to the 12th entry", first, end)
	}
	if first, end := StepsSpan(tl.Entries[:3]); first != 0 || end != 3 {
		t.Errorf("StepsSpan without steps = %d, %d; want all of them", first, end)
	}
	for _, tt := range []struct {
		n    int
		at   time.Duration
		want []int
	}{
		{12, 60 * time.Second, []int{13}}, // the steps' end
		{9, 2 * time.Second, nil},         // NodeStageVolume is sent after #9, at +10s
		{9, 10 * time.Second, nil},
		{10, 10 * time.Second, []int{13}},
		{11, 30 * time.Second, []int{13}},
		{13, 60 * time.Second, nil}, // answered
	} {
		var seqs []int
		for _, e := range InFlightAt(tl.Entries, tt.n, tt.at) {
			seqs = append(seqs, e.Seq)
		}
		if !slices.Equal(seqs, tt.want) {
			t.Errorf("in flight after #%d at +%s: %v, want %v", tt.n, tt.at, seqs, tt.want)
		}
	}
}

// TestHTMLVerdictAndFolds: the page heads its lanes with the verdict, the
// failing step and the call left in flight; it opens on the steps, with
// the cluster's start-up and what came after the steps folded; the hung
// call shows where it was sent.
func TestHTMLVerdictAndFolds(t *testing.T) {
	htmltest.Chromium(t)
	verdict := &Verdict{Summary: `step 2 "wait pod/app": timed out`}
	url := writePageFile(t, hungRun(), HTMLOptions{Title: "hung", Verdict: verdict}, "")
	doc := htmltest.DOM(t, url, 0)

	if got := htmltest.Text(htmltest.ByID(doc, "verdict-status")) + " " + htmltest.Text(htmltest.ByID(doc, "verdict-summary")); got != "FAILED "+verdict.Summary {
		t.Errorf("verdict %q", got)
	}
	if !htmltest.HasClass(htmltest.ByID(doc, "verdict"), "failed") {
		t.Errorf("the verdict's classes are %q", htmltest.Attr(htmltest.ByID(doc, "verdict"), "class"))
	}
	items := htmltest.Text(htmltest.ByID(doc, "verdict-items"))
	for _, want := range []string{"failing step: #12 STEP wait wait pod/app step 2 failed after 1m0s ERROR: timed out",
		"left in flight: #13 NodeStageVolume vol-1: sent at +10.000s, still in flight when the steps ended"} {
		if !strings.Contains(items, want) {
			t.Errorf("the verdict does not say %q:\n%s", want, items)
		}
	}
	// The verdict comes before the lanes.
	if v, tl := position(doc, htmltest.ByID(doc, "verdict")), position(doc, htmltest.ByID(doc, "timeline")); v > tl {
		t.Error("the verdict comes after the timeline")
	}

	var shown, hidden []string
	for _, r := range htmltest.All(doc, "row") {
		if htmltest.HasAttr(r, "hidden") {
			hidden = append(hidden, rowName(r))
		} else {
			shown = append(shown, rowName(r))
		}
	}
	if want := strings.Fields("4 5 6 7 8 9 13-sent 10 11 12"); !slices.Equal(shown, want) {
		t.Errorf("rows shown %q, want %q: the steps, and where the hung call was sent", shown, want)
	}
	if want := strings.Fields("1 2 3 13 14"); !slices.Equal(hidden, want) {
		t.Errorf("rows folded %q, want %q", hidden, want)
	}
	sent := htmltest.All(doc, "cutoff")
	if len(sent) != 1 || !htmltest.HasClass(sent[0], "sent") {
		t.Errorf("want one call cut off, drawn as sent; got %d", len(sent))
	}
	folds := htmltest.All(doc, "fold")
	if len(folds) != 2 ||
		!strings.HasPrefix(htmltest.Text(folds[0]), "▸ show 3 entries of the cluster's own start-up") ||
		!strings.HasPrefix(htmltest.Text(folds[1]), "▸ show 2 entries after the steps") {
		var texts []string
		for _, f := range folds {
			texts = append(texts, htmltest.Text(f))
		}
		t.Errorf("folds %q", texts)
	}
	if got := htmltest.Text(htmltest.ByID(doc, "count")); got != "9 of 14 entries" {
		t.Errorf("count %q", got)
	}

	// #all unfolds both; the pod's filter keeps its volume's fault and
	// the hung call.
	doc = htmltest.DOM(t, url+"#all&subject=pod%20default%2Fapp", 0)
	shown = nil
	for _, r := range htmltest.All(doc, "row") {
		if !htmltest.HasAttr(r, "hidden") {
			shown = append(shown, rowName(r))
		}
	}
	if want := strings.Fields("5 6 9 13-sent 10 13 14"); !slices.Equal(shown, want) {
		t.Errorf("with every entry unfolded and the pod chosen, rows %q show, want %q", shown, want)
	}
}

// position is n's place in the document, for comparing orders.
func position(doc, n *html.Node) int {
	i := 0
	for d := range doc.Descendants() {
		if d == n {
			return i
		}
		i++
	}
	return -1
}

// layoutProbe measures the page after its script ran and writes what it
// found into the document, for --dump-dom.
const layoutProbe = `<script>(function () {
  function box(id) { var b = document.getElementById(id).getBoundingClientRect();
    return {left: b.left, right: b.right, top: b.top, bottom: b.bottom}; }
  var first = Array.prototype.find.call(document.querySelectorAll(".row"), function (r) { return !r.hidden; });
  var out = {width: innerWidth, height: innerHeight, scrollWidth: document.documentElement.scrollWidth,
    scrollHeight: document.documentElement.scrollHeight, scrollY: scrollY, detail: box("detail"),
    detailHidden: document.getElementById("detail").hidden, verdict: box("verdict"), firstRow: first ? first.dataset.seq : ""};
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}());</script>`

type rect struct{ Left, Right, Top, Bottom float64 }

type layout struct {
	Width, Height             float64
	ScrollWidth, ScrollHeight float64
	ScrollY                   float64
	Detail, Verdict           rect
	DetailHidden              bool
	FirstRow                  string
}

// TestHTMLFitsTheWindow renders pages with many lanes in windows 1280 and
// 1920 pixels wide, an entry chosen: the page does not overflow the
// window, the verdict is in view without scrolling, the detail pane is
// within the window, and the first row shown is the first step's.
func TestHTMLFitsTheWindow(t *testing.T) {
	htmltest.Chromium(t)
	for _, tt := range []struct {
		name     string
		tl       Timeline
		seq      int
		firstRow string
	}{
		{"sample", sampleTimeline(), 12, "1"},
		{"hung", hungRun(), 13, "4"},
	} {
		url := writePageFile(t, tt.tl, HTMLOptions{Title: tt.name, Verdict: &Verdict{Summary: "a long summary " + strings.Repeat("of the failure ", 20)}}, layoutProbe)
		for _, size := range []string{"1280,900", "1920,1080"} {
			t.Run(tt.name+"/"+size, func(t *testing.T) {
				doc := htmltest.DOMAt(t, fmt.Sprintf("%s#seq=%d", url, tt.seq), size, 0)
				var l layout
				if err := json.Unmarshal([]byte(htmltest.Text(htmltest.ByID(doc, "probe"))), &l); err != nil {
					t.Fatalf("the probe: %v", err)
				}
				if w := strings.Split(size, ",")[0]; fmt.Sprint(l.Width) != w {
					t.Fatalf("the window is %v wide, want %s", l.Width, w)
				}
				if l.ScrollWidth > l.Width || l.ScrollHeight > l.Height || l.ScrollY != 0 {
					t.Errorf("the page is %vx%v (scrolled %v) in a %vx%v window: it must fit, the timeline scrolls inside it",
						l.ScrollWidth, l.ScrollHeight, l.ScrollY, l.Width, l.Height)
				}
				if l.DetailHidden || l.Detail.Left < 0 || l.Detail.Right > l.Width || l.Detail.Top < 0 || l.Detail.Top >= l.Height || l.Detail.Right-l.Detail.Left < 200 {
					t.Errorf("the detail pane of #%d is at %+v (hidden %v), want it within the %vx%v window", tt.seq, l.Detail, l.DetailHidden, l.Width, l.Height)
				}
				if l.Verdict.Top < 0 || l.Verdict.Bottom > l.Height/2 || l.Verdict.Right > l.Width {
					t.Errorf("the verdict is at %+v, want it in the top half of the %vx%v window", l.Verdict, l.Width, l.Height)
				}
				if l.FirstRow != tt.firstRow {
					t.Errorf("the first row shown is #%s, want #%s", l.FirstRow, tt.firstRow)
				}
			})
		}
	}
}

// TestLivePageShowsCallsInFlight serves a live page whose server, once
// polled, has a call in flight: the page shows it where it was sent,
// before any answer, and in its verdict; when the answer comes, the call
// shows where it was sent and where it was answered.
func TestLivePageShowsCallsInFlight(t *testing.T) {
	htmltest.Chromium(t)
	run := hungRun()
	var mu sync.Mutex
	tl := Timeline{Entries: run.Entries[:11], StartUp: 3}
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/page" {
			if err := WriteHTML(w, tl, HTMLOptions{Title: "live", Live: "/data"}); err != nil {
				t.Error(err)
			}
			return
		}
		// Polled: NodeStageVolume is sent after #9 and hangs.
		polls++
		hung := run.Entries[12]
		hung.Seq, hung.At, hung.Detail, hung.Err = 0, hung.Call.Started, "in flight", ""
		tl.InFlight = []Entry{hung}
		after := 0
		fmt.Sscan(r.URL.Query().Get("after"), &after)
		data, err := PageData(tl, after)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}))
	defer srv.Close()

	doc := htmltest.DOM(t, srv.URL+"/page", 3*time.Second)
	mu.Lock()
	if polls == 0 {
		t.Fatal("the page never polled")
	}
	mu.Unlock()
	var shown []string
	var inFlight *html.Node
	for _, r := range htmltest.All(doc, "row") {
		if !htmltest.HasAttr(r, "hidden") {
			shown = append(shown, rowName(r)+htmltest.Attr(r, "data-sent"))
		}
		if htmltest.Attr(r, "data-sent") == "in-flight" {
			inFlight = r
		}
	}
	if want := strings.Fields("4 5 6 7 8 9 -sentin-flight 10 11"); !slices.Equal(shown, want) {
		t.Errorf("rows shown %q, want %q: the call in flight after #9, where it was sent", shown, want)
	}
	if inFlight == nil || !strings.Contains(htmltest.Text(inFlight), "NodeStageVolume vol-1: sent at +10.000s, in flight") ||
		!htmltest.HasClass(htmltest.All(inFlight, "entry")[0], "inflight") {
		t.Errorf("no call in flight drawn as one")
	}
	if got := htmltest.Text(htmltest.ByID(doc, "verdict-status")); got != "LIVE" {
		t.Errorf("a live page's verdict is %q", got)
	}
	if items := htmltest.Text(htmltest.ByID(doc, "verdict-items")); !strings.Contains(items, "in flight: NodeStageVolume vol-1") {
		t.Errorf("the verdict does not name the call in flight: %q", items)
	}

	// The answer comes: the call is drawn where it was sent and where it
	// was answered, and no longer in flight.
	mu.Lock()
	tl = Timeline{Entries: run.Entries, StartUp: 3}
	mu.Unlock()
	pd := pageData{}
	data, err := PageData(tl, 11)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pd); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range pd.Records {
		got = append(got, fmt.Sprintf("%d sent=%v after=%d cutOff=%v", r.Seq, r.Sent, r.After, r.CutOff))
	}
	// A live page has no end: nothing is cut off.
	if want := []string{"12 sent=false after=0 cutOff=false", "13 sent=true after=9 cutOff=false", "13 sent=false after=0 cutOff=false",
		"14 sent=false after=0 cutOff=false"}; !slices.Equal(got, want) || len(pd.InFlight) != 0 || pd.StartUp != 3 || pd.StepsEnd != 0 {
		t.Errorf("records %q, %d in flight, start-up %d, steps end %d; want %q, none, 3, 0", got, len(pd.InFlight), pd.StartUp, pd.StepsEnd, want)
	}
}

// Where a call was sent gets a row of its own only when it is not the row
// before its answer: time passed and other entries came meanwhile, or the
// shutdown cut it off.
func TestSentRows(t *testing.T) {
	call := func(seq, after int, started, at time.Duration) Entry {
		return Entry{Seq: seq, At: at, Kind: CSI, Verb: "NodeStageVolume", Call: &CSICall{StartedAfter: after, Started: started}}
	}
	for _, tt := range []struct {
		name     string
		e        Entry
		stepsEnd int
		want     bool
	}{
		{"no time passed", call(5, 2, time.Second, time.Second), 0, false},
		{"time passed, nothing else came", call(5, 4, time.Second, 2*time.Second), 0, false},
		{"time passed and entries came", call(5, 2, time.Second, 2*time.Second), 0, true},
		{"cut off by the shutdown", call(5, 3, time.Second, time.Second), 4, true},
		{"sent after the steps", call(6, 5, time.Second, time.Second), 4, false},
	} {
		r, ok := Timeline{}.sentRecord(tt.e, pageRecord{Seq: tt.e.Seq}, tt.stepsEnd)
		if ok != tt.want {
			t.Errorf("%s: a sent row %v, want %v", tt.name, ok, tt.want)
		}
		if ok && (!r.Sent || r.After != tt.e.Call.StartedAfter || r.CutOff != (tt.stepsEnd > 0)) {
			t.Errorf("%s: %+v", tt.name, r)
		}
	}
}
