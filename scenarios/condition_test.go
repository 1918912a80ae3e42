package scenarios

import (
	"strings"
	"testing"
	"time"
)

func pvcObject() map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "PersistentVolumeClaim",
		"metadata": map[string]any{
			"name":        "data",
			"uid":         "123",
			"annotations": map[string]any{"pv.kubernetes.io/provisioned-by": "hostpath.csisim.io"},
		},
		"spec":   map[string]any{"volumeName": "pvc-123", "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}},
		"status": map[string]any{"phase": "Bound"},
	}
}

func listOf(names ...string) map[string]any {
	items := make([]any, len(names))
	for i, n := range names {
		items[i] = map[string]any{"metadata": map[string]any{"name": n}}
	}
	return map[string]any{"kind": "List", "items": items}
}

func TestEvalJSONPath(t *testing.T) {
	tests := []struct {
		expr, want, wantErr string
	}{
		{expr: "{.status.phase}", want: "Bound"},
		{expr: ".status.phase", want: "Bound"},
		{expr: "{.status.missing}", want: ""},
		{expr: "{.metadata.annotations['pv\\.kubernetes\\.io/provisioned-by']}", want: "hostpath.csisim.io"},
		{expr: "{.metadata.annotations.pv\\.kubernetes\\.io/provisioned-by}", want: "hostpath.csisim.io"},
		{expr: "pvc-{.metadata.uid}", want: "pvc-123"},
		{expr: "{.spec.resources.requests}", want: `{"storage":"1Gi"}`},
		{expr: "{.status.phase", wantErr: "invalid jsonpath"},
	}
	for _, tt := range tests {
		got, err := evalJSONPath(tt.expr, pvcObject())
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.expr, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("%s = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

func TestCheckEvaluate(t *testing.T) {
	deleting := pvcObject()
	deleting["metadata"].(map[string]any)["deletionTimestamp"] = "2025-01-01T00:00:00Z"
	deleting["metadata"].(map[string]any)["finalizers"] = []any{"kubernetes.io/pvc-protection"}
	pvc := ObjectRef{Kind: "pvc", Name: "data"}
	pvs := ObjectRef{Kind: "pv"}

	tests := []struct {
		name     string
		check    Check
		obj      map[string]any
		wantHeld bool
		wantSeen string
		wantExp  string
	}{
		{"exists", Check{Object: pvc}, pvcObject(), true, "exists", "pvc/data to exist"},
		{"exists, not found", Check{Object: pvc}, nil, false, "<not found>", "pvc/data to exist"},
		{"equals holds", Check{Object: pvc, JSONPath: "{.status.phase}", Equals: ptr("Bound")}, pvcObject(), true, "Bound", "pvc/data {.status.phase} == Bound"},
		{"equals differs", Check{Object: pvc, JSONPath: "{.status.phase}", Equals: ptr("Lost")}, pvcObject(), false, "Bound", "pvc/data {.status.phase} == Lost"},
		{"equals, field missing", Check{Object: pvc, JSONPath: "{.status.nope}", Equals: ptr("x")}, pvcObject(), false, "<empty>", "pvc/data {.status.nope} == x"},
		{"equals empty string", Check{Object: pvc, JSONPath: "{.status.nope}", Equals: ptr("")}, pvcObject(), true, "<empty>", `pvc/data {.status.nope} == ""`},
		{"equals, object missing", Check{Object: pvc, JSONPath: "{.status.phase}", Equals: ptr("Bound")}, nil, false, "<not found>", "pvc/data {.status.phase} == Bound"},
		{"starts with", Check{Object: pvc, JSONPath: "{.status.phase}", StartsWith: ptr("Bo")}, pvcObject(), true, "Bound", "pvc/data {.status.phase} to start with Bo"},
		{"starts otherwise", Check{Object: pvc, JSONPath: "{.status.phase}", StartsWith: ptr("ound")}, pvcObject(), false, "Bound", "pvc/data {.status.phase} to start with ound"},
		{"jsonpath non-empty", Check{Object: pvc, JSONPath: "{.spec.volumeName}"}, pvcObject(), true, "pvc-123", "pvc/data {.spec.volumeName} to be non-empty"},
		{"jsonpath empty", Check{Object: pvc, JSONPath: "{.spec.nope}"}, pvcObject(), false, "<empty>", "pvc/data {.spec.nope} to be non-empty"},
		{"gone holds", Check{Object: pvc, Gone: true}, nil, true, "<not found>", "pvc/data to be gone"},
		{"gone, still there", Check{Object: pvc, Gone: true}, pvcObject(), false, "exists", "pvc/data to be gone"},
		{"gone, held by finalizer", Check{Object: pvc, Gone: true}, deleting, false, "exists, being deleted since 2025-01-01T00:00:00Z, held by finalizers kubernetes.io/pvc-protection", "pvc/data to be gone"},
		{"count holds", Check{Object: pvs, Count: ptr(0)}, listOf(), true, "0 items", "0 pv"},
		{"count differs", Check{Object: pvs, Count: ptr(0)}, listOf("pvc-1"), false, "1 item: pvc-1", "0 pv"},
		{"count differs, many", Check{Object: pvs, Count: ptr(1), LabelSelector: "a=b"}, listOf("a", "b", "c", "d", "e", "f", "g"), false, "7 items: a, b, c, d, e, +2 more", "1 pv with labels a=b"},
		{"count and jsonpath", Check{Object: pvs, Count: ptr(2), JSONPath: "{.items[*].metadata.name}", Equals: ptr("a b")}, listOf("a", "b"), true, "a b", "2 pv and pv {.items[*].metadata.name} == a b"},
		{"jsonpath on a list", Check{Object: pvs, JSONPath: "{.items[0].metadata.name}", Equals: ptr("a")}, listOf("a"), true, "a", "pv {.items[0].metadata.name} == a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.check.evaluate(tt.obj)
			if v.held != tt.wantHeld || v.seen != tt.wantSeen {
				t.Errorf("evaluate = held %v, seen %q; want %v, %q", v.held, v.seen, tt.wantHeld, tt.wantSeen)
			}
			if got := tt.check.expectation(); got != tt.wantExp {
				t.Errorf("expectation = %q, want %q", got, tt.wantExp)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := map[time.Duration]string{
		60 * time.Second:          "60s",
		90 * time.Second:          "90s",
		1500 * time.Millisecond:   "1.5s",
		20 * time.Millisecond:     "20ms",
		1234567 * time.Nanosecond: "1ms",
		300 * time.Microsecond:    "<1ms",
	}
	for d, want := range tests {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
