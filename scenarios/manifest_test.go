package scenarios

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitDocuments(t *testing.T) {
	text := "# leading comment\n---\na: 1\n---   # separator with a comment\n\n# only comments here\n---\nb: 2\nc: ---not-a-separator\n--- \n"
	docs := splitDocuments(text)
	var lines []int
	for _, d := range docs {
		lines = append(lines, d.line)
	}
	if !reflect.DeepEqual(lines, []int{3, 8}) {
		t.Errorf("document lines = %v, want [3 8]", lines)
	}
	if !strings.Contains(docs[1].text, "c: ---not-a-separator") {
		t.Errorf("second document = %q", docs[1].text)
	}
}

func TestReadManifests(t *testing.T) {
	text := `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  n: "1"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: b, namespace: other}
spec:
  resources: {requests: {storage: 1Gi}}
  replicas: 3
  ratio: 0.5
  enabled: on
`
	objs, errs := readManifests(text, "m.yaml", 10)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(objs) != 2 {
		t.Fatalf("got %d objects", len(objs))
	}
	if objs[0].Line != 10 || objs[1].Line != 17 || objs[1].File != "m.yaml" {
		t.Errorf("lines = %d, %d; want 10, 17", objs[0].Line, objs[1].Line)
	}
	spec := objs[1].Object["spec"].(map[string]any)
	// Integers must be int64 and floats float64, as unstructured objects
	// require; "on" is true as in kubectl's YAML 1.1 reading.
	if spec["replicas"] != int64(3) || spec["ratio"] != 0.5 || spec["enabled"] != true {
		t.Errorf("spec = %#v", spec)
	}
	if objs[1].Describe() != "PersistentVolumeClaim/b" {
		t.Errorf("describe = %q", objs[1].Describe())
	}
}

func TestReadManifestsErrors(t *testing.T) {
	tests := []struct {
		name, text string
		wantLine   int
		wantMsg    string
	}{
		{"no apiVersion", "kind: Pod\nmetadata: {name: a}\n", 5, "document 1: apiVersion is missing"},
		{"no name", "apiVersion: v1\nkind: Pod\n", 5, "metadata.name is missing"},
		{"syntax error in second document", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n labels: {}\n", 13, "document 2: invalid YAML"},
		{"list", "- a\n- b\n", 5, "not an object"},
		{"empty", "\n# nothing\n", 5, "manifest holds no objects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := readManifests(tt.text, "m.yaml", 5)
			if len(errs) != 1 {
				t.Fatalf("got %d errors: %v", len(errs), errs)
			}
			if errs[0].Line != tt.wantLine || !strings.Contains(errs[0].Msg, tt.wantMsg) || errs[0].File != "m.yaml" {
				t.Errorf("got %v, want m.yaml:%d: ...%s", errs[0], tt.wantLine, tt.wantMsg)
			}
		})
	}
}
