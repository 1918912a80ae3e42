package scenarios

import (
	"strings"
	"testing"
)

func TestMatchObject(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"name": "data", "labels": map[string]any{"app.kubernetes.io/name": "db"}},
		"spec":     map[string]any{"storageClassName": "fast", "accessModes": []any{"ReadWriteOnce"}, "replicas": float64(3)},
		"status":   map[string]any{"phase": "Bound", "ready": true},
	}
	tests := []struct {
		name  string
		match any
		want  string // "" for a match, else the mismatch
	}{
		{"subset of maps", map[string]any{"status": map[string]any{"phase": "Bound"}}, ""},
		{"two fields", map[string]any{"status": map[string]any{"phase": "Bound"}, "spec": map[string]any{"storageClassName": "fast"}}, ""},
		{"scalar differs", map[string]any{"status": map[string]any{"phase": "Pending"}}, "status.phase: want Pending, got Bound"},
		{"missing field", map[string]any{"status": map[string]any{"reason": "x"}}, "status.reason: want x, got <missing>"},
		{"number as text", map[string]any{"spec": map[string]any{"replicas": "3"}}, ""},
		{"bool as text", map[string]any{"status": map[string]any{"ready": "true"}}, ""},
		{"list element-wise", map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}}}, ""},
		{"list length", map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOnce", "ReadOnlyMany"}}}, "spec.accessModes: want 2 items, got 1 items [ReadWriteOnce]"},
		{"list element", map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteMany"}}}, "spec.accessModes[0]: want ReadWriteMany, got ReadWriteOnce"},
		{"map wanted", map[string]any{"status": map[string]any{"phase": map[string]any{"x": "y"}}}, "status.phase: want a mapping, got Bound"},
		{"null is missing", map[string]any{"metadata": map[string]any{"deletionTimestamp": nil}}, ""},
		{"null but present", map[string]any{"status": map[string]any{"phase": nil}}, "status.phase: want <missing>, got Bound"},
		{"key with dots", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "web"}}}, `metadata.labels["app.kubernetes.io/name"]: want web, got db`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if m := matchObject(tt.match, obj); m != nil {
				got = m.String()
			}
			if got != tt.want {
				t.Errorf("matchObject = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseMatch(t *testing.T) {
	tests := []struct {
		name, step, wantErr string
	}{
		{"ok", "wait: {object: pvc/data, match: {status: {phase: Bound}}}", ""},
		{"list kind", "assert: {object: pvc, match: {items: [{status: {phase: Bound}}]}}", ""},
		{"with jsonPath", "wait: {object: pvc/data, jsonPath: '{.a}', match: {status: {phase: Bound}}}", "match and jsonPath can't be combined"},
		{"not a mapping", "wait: {object: pvc/data, match: Bound}", "match must be a mapping"},
		{"with gone", "wait: {object: pvc/data, gone: true, match: {a: b}}", "gone: true can't be combined with match"},
		{"undefined var", "wait: {object: pvc/data, match: {spec: {volumeName: '${pv}'}}}", "undefined variable ${pv}"},
		{"old key", "wait: {object: pvc/data, jsonpath: '{.a}'}", "x.yaml:2: step 1 (wait): key jsonpath is now jsonPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte("steps:\n  - "+tt.step+"\n"), t.TempDir())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestMatchCheckExpectation(t *testing.T) {
	s := mustParse(t, "steps:\n  - wait: {object: pvc/data, match: {status: {phase: Bound}, spec: {storageClassName: fast}}}\n")
	c := s.Steps[0].Wait.Check
	if got, want := c.expectation(), "pvc/data to match spec.storageClassName=fast, status.phase=Bound"; got != want {
		t.Errorf("expectation %q, want %q", got, want)
	}
	v := c.evaluate(map[string]any{"status": map[string]any{"phase": "Pending"}, "spec": map[string]any{"storageClassName": "fast"}})
	if v.held || v.seen != "status.phase: want Bound, got Pending" {
		t.Errorf("verdict %+v", v)
	}
}
