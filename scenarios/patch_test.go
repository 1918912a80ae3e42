package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestParsePatch(t *testing.T) {
	s, err := Parse("x.yaml", []byte(`steps:
  - wait: {object: pvc/data, save: {size: '{.spec.resources.requests.storage}'}}
  - patch:
      object: pvc/data
      type: strategic
      patch: {spec: {resources: {requests: {storage: '${size}'}}}}
      refused: {code: 403, messagePrefix: 'persistentvolumeclaims "data" is forbidden'}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	pt := s.Steps[1].Patch
	if pt == nil || pt.Object != (ObjectRef{Kind: "pvc", Name: "data"}) || pt.Type != types.StrategicMergePatchType ||
		pt.Refused == nil || pt.Refused.Code != 403 || s.Steps[1].Name != "patch pvc/data" {
		t.Fatalf("parsed %+v (name %q)", pt, s.Steps[1].Name)
	}
	expanded, err := expandStep(s.Steps[1], map[string]string{"size": "2Gi"})
	if err != nil {
		t.Fatal(err)
	}
	body := expanded.Patch.Patch.(map[string]any)["spec"].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)["storage"]
	if body != "2Gi" {
		t.Errorf("expanded patch storage %v, want 2Gi", body)
	}

	for _, tt := range []struct{ src, want string }{
		{"  - patch: {object: pvc/data}\n", "patch needs object"},
		{"  - patch: {object: pvc, patch: {a: 1}}\n", "patch needs kind/name"},
		{"  - patch: {object: pvc/data, patch: text}\n", "patch must be a mapping"},
		{"  - patch: {object: pvc/data, type: apply, patch: {a: 1}}\n", "type must be merge, strategic or json"},
		{"  - patch: {object: pvc/data, patch: {a: '${nope}'}}\n", "nope"},
		{"  - patch: {object: pvc/data, patch: {a: 1}, refused: {message: x}}\n", "refused needs code"},
		{"  - patch: {object: pvc/data, patch: {a: 1}, refused: {code: 200}}\n", "code must be an HTTP error status"},
		{"  - patch: {object: pvc/data, patch: {a: 1}, refused: {code: 422, message: a, messagePrefix: b}}\n", "not both"},
	} {
		_, err := Parse("x.yaml", []byte("steps:\n"+tt.src), ".")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", strings.TrimSpace(tt.src), err, tt.want)
		}
	}
}

// refusingObjects answers every patch with err.
type refusingObjects struct {
	objectStore
	err error
}

func (r refusingObjects) patch(context.Context, ObjectRef, string, types.PatchType, []byte) error {
	return r.err
}

func TestPatchRefused(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data", errors.New("no"))
	tests := []struct {
		name    string
		err     error
		refused *Refusal
		wantErr string
	}{
		{"accepted", nil, nil, ""},
		{"refused as expected", forbidden, &Refusal{Code: 403, Message: `persistentvolumeclaims "data" is forbidden: no`}, ""},
		{"refused, prefix", forbidden, &Refusal{Code: 403, MessagePrefix: `persistentvolumeclaims "data"`}, ""},
		{"accepted but a refusal expected", nil, &Refusal{Code: 403}, "was accepted; expected a 403 refusal"},
		{"another code", forbidden, &Refusal{Code: 422}, `was refused with 403`},
		{"another message", forbidden, &Refusal{Code: 403, Message: "other"}, `expected a 403 refusal "other"`},
		{"refused unexpectedly", forbidden, nil, "forbidden: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := &executor{objects: refusingObjects{err: tt.err}}
			_, err := ex.patch(context.Background(), &Patch{Object: ObjectRef{Kind: "pvc", Name: "data"}, Patch: map[string]any{}, Refused: tt.refused})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("step failed: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}
