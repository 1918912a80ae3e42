package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJSONRoundTrip(t *testing.T) {
	tl := sampleTimeline()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, tl); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("ReadJSON: %v\n%s", err, buf.String())
	}
	// What the format leaves out, and what it adds: the wall time, and
	// the objects' apiVersion and kind.
	want := sampleTimeline()
	for i := range want.Entries {
		want.Entries[i].Wall = 0
		if w := want.Entries[i].Write; w != nil && w.Object != nil {
			obj := w.Object.DeepCopyObject()
			gvks, _, err := objectScheme.ObjectKinds(obj)
			if err != nil {
				t.Fatal(err)
			}
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
			w.Object = obj
		}
	}
	if diff := cmp.Diff(want, *got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("read back differs (-want +got):\n%s", diff)
	}
	// And written again, the same bytes.
	var again bytes.Buffer
	if err := WriteJSON(&again, *got); err != nil {
		t.Fatal(err)
	}
	if again.String() != buf.String() {
		t.Errorf("written again, the timeline differs:\n%s\n---\n%s", buf.String(), again.String())
	}
}

func TestJSONLeavesTheObjectsAlone(t *testing.T) {
	tl := sampleTimeline()
	if err := WriteJSON(&bytes.Buffer{}, tl); err != nil {
		t.Fatal(err)
	}
	if gvk := tl.Entries[1].Write.Object.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		t.Errorf("writing set the recorded object's kind to %s; others read it", gvk)
	}
}

func TestJSONSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleTimeline()); err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", len(lines)+1, err, sc.Text())
		}
		lines = append(lines, m)
	}
	tl := sampleTimeline()
	if len(lines) != len(tl.Entries)+len(tl.Violations) {
		t.Fatalf("%d lines, want one per entry and violation (%d)", len(lines), len(tl.Entries)+len(tl.Violations))
	}
	// What trace/README.md documents, checked on a few lines.
	for _, tt := range []struct {
		line int
		path string
		want any
	}{
		{0, "seq", 1.0},
		{0, "kind", "STEP"},
		{3, "at", 4.5e9},
		{3, "atText", "+4.500s"},
		{3, "csi.code", "OK"},
		{3, "csi.name", "pvc-1"},
		{3, "csi.startedAt", 1e9},
		{3, "csi.startedAtText", "+1.000s"},
		{11, "err", "rpc error: code = Internal desc = injected; retry"},
		{11, "csi.code", "Internal"},
		{11, "csi.stagingPath", "/var/lib/kubelet/x"},
		{11, "csi.block", true},
		{1, "write.verb", "create"},
		{1, "write.apiVersion", "v1"},
		{1, "write.object.kind", "PersistentVolumeClaim"},
		{1, "write.object.metadata.name", "data"},
		{5, "write.subresource", "status"},
		{8, "write.apiVersion", "events.k8s.io/v1"},
		{9, "write.apiVersion", "v1"},
		{14, "write.apiVersion", "snapshot.storage.k8s.io/v1"},
		{14, "write.removed", true},
		{13, "data.claim", "data"},
		{13, "data.corrupt", []any{"uid-old"}},
		{16, "kind", "INVARIANT"},
		{16, "violation.invariant", "single-node"},
		{16, "violation.entries", []any{4.0, 12.0}},
		{16, "atText", "+16.500s"},
		{17, "violation.message", "at the end"},
		{17, "atText", "+22.500s"},
	} {
		var v any = lines[tt.line]
		for _, k := range strings.Split(tt.path, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if !cmp.Equal(v, tt.want) {
			t.Errorf("line %d: %s = %#v, want %#v", tt.line+1, tt.path, v, tt.want)
		}
	}
	for i, l := range lines {
		if _, ok := l["wall"]; ok {
			t.Errorf("line %d has the wall-clock duration", i+1)
		}
	}
}

func TestReadJSONErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"not JSON", "{\n", "line 1"},
		{"unknown field", `{"seq":1,"at":0,"atText":"+0.000s","kind":"API","colour":"red"}`, `unknown field "colour"`},
		{"unknown code", `{"seq":1,"at":0,"atText":"","kind":"CSI","csi":{"code":"Sideways","startedAfter":0,"startedAt":0,"startedAtText":""}}`, `unknown gRPC code "Sideways"`},
		{"violation without its data", "\n" + `{"at":0,"atText":"","kind":"INVARIANT"}`, "line 2: an INVARIANT line without its violation"},
		{"kind mismatch", `{"seq":3,"at":0,"atText":"","kind":"API","write":{"verb":"create","kind":"Pod","apiVersion":"v1","name":"x",` +
			`"object":{"apiVersion":"v1","kind":"Node","metadata":{"name":"x"}}}}`, "entry #3: the object is a /v1, Kind=Node, the write says /v1, Kind=Pod"},
		{"unknown kind", `{"seq":1,"at":0,"atText":"","kind":"API","write":{"verb":"create","kind":"Gadget","apiVersion":"example.com/v1","name":"x",` +
			`"object":{"apiVersion":"example.com/v1","kind":"Gadget"}}}`, "decoding the Gadget"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadJSON error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestParseCode(t *testing.T) {
	for c := range 17 {
		code := codes.Code(c)
		got, err := parseCode(code.String())
		if err != nil || got != code {
			t.Errorf("parseCode(%q) = %v, %v", code.String(), got, err)
		}
	}
	if got, err := parseCode("Code(42)"); err != nil || got != 42 {
		t.Errorf("parseCode(Code(42)) = %v, %v", got, err)
	}
}

// The run's directory is written as {root} in every format: two runs of
// a seed have directories of their own.
func TestFormatsWriteTheRunsDirectoryAsRoot(t *testing.T) {
	tl := sampleTimeline()
	tl.Root = "/var/lib"
	tl.Entries[15].Err = "no such file /var/lib/kubelet/y"
	var jsonl, mermaid, page bytes.Buffer
	if err := WriteJSON(&jsonl, tl); err != nil {
		t.Fatal(err)
	}
	if err := WriteMermaid(&mermaid, tl); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, tl, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"JSON": jsonl.String(), "Mermaid": mermaid.String(), "HTML": page.String()} {
		if strings.Contains(out, "/var/lib") {
			t.Errorf("the %s timeline names the run's directory", name)
		}
		if !strings.Contains(out, "{root}/kubelet/") {
			t.Errorf("the %s timeline does not write the run's directory as {root}", name)
		}
	}
	back, err := ReadJSON(&jsonl)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Entries[11].Call.StagingPath; got != "{root}/kubelet/x" {
		t.Errorf("read back, the staging path is %q", got)
	}
}

// The JSON timeline leaves the objects' managedFields out, as kubectl get
// does by default, and the recorded objects keep theirs.
func TestJSONLeavesManagedFieldsOut(t *testing.T) {
	tl := sampleTimeline()
	obj := tl.Entries[1].Write.Object
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, tl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "managedFields") || strings.Contains(buf.String(), "kube-controller-manager") {
		t.Errorf("the JSON timeline shows managedFields:\n%s", buf.String())
	}
	if len(m.GetManagedFields()) != 1 {
		t.Errorf("writing the timeline took the recorded object's managedFields: %v", m.GetManagedFields())
	}
}
