package scenarios

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"pv": "pvc-123", "uid": "123", "_x1": "y"}
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "plain", want: "plain"},
		{in: "pv/${pv}", want: "pv/pvc-123"},
		{in: "${pv}-${uid}${_x1}", want: "pvc-123-123y"},
		{in: "{.metadata.name}", want: "{.metadata.name}"},
		{in: "$pv and $", want: "$pv and $"},
		{in: "echo $${HOME}", want: "echo ${HOME}"},
		{in: "$${pv} is ${pv}", want: "${pv} is pvc-123"},
		{in: "${nope}", wantErr: "undefined variable ${nope}; set so far: _x1, pv, uid"},
		{in: "${PV}", wantErr: `(did you mean "pv"?)`},
		{in: "${pv", wantErr: "unterminated ${"},
		{in: "${}", wantErr: `invalid variable name ""`},
		{in: "${a-b}", wantErr: `invalid variable name "a-b"`},
		{in: "${1a}", wantErr: `invalid variable name "1a"`},
	}
	for _, tt := range tests {
		got, err := expandVars(tt.in, vars)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("expandVars(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("expandVars(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestExpandStepCoversEveryStringField(t *testing.T) {
	vars := map[string]string{"v": "X"}
	count := 1
	original := Step{
		Name: "n-${v}",
		Wait: &Wait{
			Check: Check{
				Object:        ObjectRef{Kind: "k${v}", Name: "o-${v}"},
				Namespace:     "ns-${v}",
				LabelSelector: "app=${v}",
				JSONPath:      "{.a.${v}}",
				Equals:        ptr("e-${v}"),
				Count:         &count,
				Save:          []SaveVar{{Name: "s", JSONPath: "{.b.${v}}"}},
			},
			Timeout: time.Second,
		},
	}
	got, err := expandStep(original, vars)
	if err != nil {
		t.Fatal(err)
	}
	want := Step{
		Name: "n-X",
		Wait: &Wait{
			Check: Check{
				Object:        ObjectRef{Kind: "kX", Name: "o-X"},
				Namespace:     "ns-X",
				LabelSelector: "app=X",
				JSONPath:      "{.a.X}",
				Equals:        ptr("e-X"),
				Count:         &count,
				Save:          []SaveVar{{Name: "s", JSONPath: "{.b.X}"}},
			},
			Timeout: time.Second,
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got.Wait, want.Wait)
	}
	if original.Wait.Object.Name != "o-${v}" || *original.Wait.Equals != "e-${v}" {
		t.Error("expandStep changed the original step")
	}

	del, err := expandStep(Step{Delete: &Delete{Object: ObjectRef{Kind: "pod", Name: "${v}"}, Namespace: "${v}"}}, vars)
	if err != nil || del.Delete.Object.Name != "X" || del.Delete.Namespace != "X" {
		t.Errorf("delete: %+v, %v", del.Delete, err)
	}
	csi, err := expandStep(Step{Assert: &Assert{Check: Check{CSICalls: &CSICallCheck{Volume: "${v}", Sequence: []string{"CreateVolume"}}}}}, vars)
	if err != nil || csi.Assert.CSICalls.Volume != "X" {
		t.Errorf("csiCalls: %+v, %v", csi.Assert.CSICalls, err)
	}
}

func TestExpandStepManifests(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "cm-${v}", "labels": map[string]any{"${v}": "${v}"}},
		"data":       map[string]any{"list": []any{"a-${v}", int64(3), true, nil}},
	}
	st := Step{Apply: &Apply{Namespace: "${v}", Objects: []Manifest{{File: "f", Line: 3, Object: obj}}}}
	got, err := expandStep(st, map[string]string{"v": "X"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "cm-X", "labels": map[string]any{"${v}": "X"}},
		"data":       map[string]any{"list": []any{"a-X", int64(3), true, nil}},
	}
	if !reflect.DeepEqual(got.Apply.Objects[0].Object, want) {
		t.Errorf("got %v\nwant %v", got.Apply.Objects[0].Object, want)
	}
	if got.Apply.Namespace != "X" || got.Apply.Objects[0].Line != 3 {
		t.Errorf("apply = %+v", got.Apply)
	}
	if obj["metadata"].(map[string]any)["name"] != "cm-${v}" {
		t.Error("expandStep changed the parsed manifest; each run must start from the original")
	}

	if _, err := expandStep(st, nil); err == nil || !strings.Contains(err.Error(), "undefined variable ${v}") {
		t.Errorf("undefined variable in a manifest: %v", err)
	}
}
