package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Patch changes one object with a patch, as kubectl patch does; with
// Refused, the step passes only if the API server refuses the patch so.
type Patch struct {
	Object    ObjectRef
	Namespace string
	// Type is merge (default), strategic or json.
	Type types.PatchType
	// Patch is the patch as decoded from the file: a mapping (a list for
	// json), sent as JSON.
	Patch any
	// Refused, if set, is the refusal the patch must meet.
	Refused *Refusal
}

// Refusal is an API error a step expects: its HTTP code, and its message
// exactly (Message) or its start (MessagePrefix).
type Refusal struct {
	Code          int32
	Message       string
	MessagePrefix string
}

var patchTypes = map[string]types.PatchType{
	"merge": types.MergePatchType, "strategic": types.StrategicMergePatchType, "json": types.JSONPatchType,
}

func (p *parser) patch(n *yaml.Node) *Patch {
	f, ok := p.mapping(n, "patch", "object", "namespace", "type", "patch", "refused")
	if !ok {
		return nil
	}
	pt := &Patch{Type: types.MergePatchType}
	if !f.has("object") || !f.has("patch") {
		p.fail(n, "patch needs object: (kind/name, e.g. pvc/data) and patch: (the change, e.g. {spec: {resources: {requests: {storage: 2Gi}}}})")
		return nil
	}
	if s, ok := p.nonEmpty(f.vals["object"], "object"); ok && p.checkVars(f.vals["object"].Line, s) {
		ref, err := parseObjectRef(s)
		switch {
		case err != nil:
			p.fail(f.vals["object"], "%v", err)
		case ref.Name == "":
			p.fail(f.vals["object"], "patch needs kind/name; %q names only a kind", s)
		}
		pt.Object = ref
	}
	if f.has("namespace") {
		pt.Namespace, _ = p.nonEmpty(f.vals["namespace"], "namespace")
	}
	if f.has("type") {
		if s, ok := p.text(f.vals["type"], "type"); ok {
			t, known := patchTypes[s]
			if !known {
				p.fail(f.vals["type"], "type must be merge, strategic or json, not %q", s)
			}
			pt.Type = t
		}
	}
	body := resolve(f.vals["patch"])
	if body.Kind != yaml.MappingNode && body.Kind != yaml.SequenceNode {
		p.fail(body, "patch must be a mapping (a list for type json), not %s", describeNode(body))
	} else if err := body.Decode(&pt.Patch); err != nil {
		p.fail(body, "patch: %v", err)
	} else {
		p.checkValueVars(body.Line, pt.Patch)
		if _, err := json.Marshal(pt.Patch); err != nil {
			p.fail(body, "patch cannot be written as JSON: %v", err)
		}
	}
	if f.has("refused") {
		pt.Refused = p.refusal(f.vals["refused"])
	}
	return pt
}

// checkValueVars checks the variables in every string of a decoded value.
func (p *parser) checkValueVars(line int, v any) {
	switch v := v.(type) {
	case string:
		p.checkVars(line, v)
	case map[string]any:
		for _, e := range v {
			p.checkValueVars(line, e)
		}
	case []any:
		for _, e := range v {
			p.checkValueVars(line, e)
		}
	}
}

func (p *parser) refusal(n *yaml.Node) *Refusal {
	f, ok := p.mapping(n, "refused", "code", "message", "messagePrefix")
	if !ok {
		return nil
	}
	r := &Refusal{}
	if !f.has("code") {
		p.fail(n, "refused needs code: (the HTTP status, e.g. 403)")
	} else if c := resolve(f.vals["code"]); c.Kind != yaml.ScalarNode || c.Tag != "!!int" || c.Decode(&r.Code) != nil || r.Code < 400 || r.Code > 599 {
		p.fail(c, "code must be an HTTP error status (400-599), not %s", describeNode(c))
	}
	if f.has("message") && f.has("messagePrefix") {
		p.fail(n, "refused takes message or messagePrefix, not both")
	}
	if f.has("message") {
		r.Message, _ = p.nonEmpty(f.vals["message"], "message")
	}
	if f.has("messagePrefix") {
		r.MessagePrefix, _ = p.nonEmpty(f.vals["messagePrefix"], "messagePrefix")
	}
	return r
}

func (ex *executor) patch(ctx context.Context, pt *Patch) (stepOutcome, error) {
	body, err := json.Marshal(pt.Patch)
	if err != nil {
		return stepOutcome{}, fmt.Errorf("patch %s: %w", pt.Object, err)
	}
	if err := ex.borrow(ctx, pt.Object, pt.Namespace); err != nil {
		return stepOutcome{}, fmt.Errorf("patch %s: %w", pt.Object, err)
	}
	err = ex.objects.patch(ctx, pt.Object, pt.Namespace, pt.Type, body)
	if pt.Refused == nil {
		if err != nil {
			return stepOutcome{}, fmt.Errorf("patch %s: %w", pt.Object, err)
		}
		return stepOutcome{detail: "patched " + pt.Object.String()}, nil
	}
	want := fmt.Sprintf("a %d refusal", pt.Refused.Code)
	switch {
	case pt.Refused.Message != "":
		want += fmt.Sprintf(" %q", pt.Refused.Message)
	case pt.Refused.MessagePrefix != "":
		want += fmt.Sprintf(" starting %q", pt.Refused.MessagePrefix)
	}
	var status apierrors.APIStatus
	if err == nil {
		return stepOutcome{}, &conditionError{expected: want, observed: "accepted",
			msg: fmt.Sprintf("patch %s was accepted; expected %s", pt.Object, want)}
	}
	if !errors.As(err, &status) {
		return stepOutcome{}, fmt.Errorf("patch %s: %w", pt.Object, err)
	}
	code, msg := status.Status().Code, status.Status().Message
	if code != pt.Refused.Code || (pt.Refused.Message != "" && msg != pt.Refused.Message) ||
		!strings.HasPrefix(msg, pt.Refused.MessagePrefix) {
		seen := fmt.Sprintf("%d %q", code, msg)
		return stepOutcome{}, &conditionError{expected: want, observed: seen,
			msg: fmt.Sprintf("patch %s was refused with %s; expected %s", pt.Object, seen, want)}
	}
	return stepOutcome{detail: fmt.Sprintf("patch %s refused: %d %s", pt.Object, code, msg)}, nil
}
