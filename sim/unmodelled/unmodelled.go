// Package unmodelled is what the simulated cluster does not act on: the
// fields of the objects csisim serves that change what a real v1.37
// cluster would do and that no simulated component (sim/...) carries
// out, and the kinds a real cluster runs that csisim does not serve. One
// table (table.go) says, for each, what it would change and why csisim
// does not model it; Check refuses an object that uses one, so that a
// manifest pasted from the field is either run as the real cluster would
// run it or refused by name — never quietly half-run into a green result.
//
// Check is pure (an object and, for an update, the object before, as
// unstructured maps) so that every entry point can call it: the API
// server's admission (fakekube's Options.Refuse, which sim/cluster wires
// to CheckObject: kubectl apply against csisim serve, the Go API's Apply,
// a scenario's apply at run time) and a scenario's load on the simulator
// (the backend's RefuseManifest, with the field's file:line). Objects
// that csisim's own controllers make come from templates that were
// checked when they were applied, and an update is refused only for a
// refused field it changes, so nothing is refused twice.
//
// It lives under sim/ because it describes the simulated components;
// it imports none of them, so the API server and the scenario loader can
// both use it without a cycle.
package unmodelled

//go:generate go test -run ^TestStatusDocUnmodelledTable$ -update-status .

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Backend is what to run instead, for a field csisim does not model.
type Backend string

const (
	// RealControlPlane: the real kube-apiserver, kube-controller-manager
	// and kube-scheduler act on it (csisim run --backend realkube).
	RealControlPlane Backend = "--backend realkube"
	// RealNodes: a real kubelet acts on it, so the real control plane
	// with real nodes (csisim run --backend realkube --real-nodes).
	RealNodes Backend = "--backend realkube --real-nodes"
)

// podSpecs are the kinds that hold a pod spec, and where; Pod rows
// (Row.PodSpec) apply to each.
var podSpecs = []struct {
	group, kind, prefix string
}{
	{"", "Pod", "spec"},
	{"apps", "Deployment", "spec.template.spec"},
	{"apps", "ReplicaSet", "spec.template.spec"},
	{"apps", "StatefulSet", "spec.template.spec"},
}

// Refusal is one refused field of an object.
type Refusal struct {
	// Path is the field's path from the object, with list indexes
	// (spec.containers[0].lifecycle); "kind" for a kind csisim does not
	// serve.
	Path string
	// Message is "csisim does not model <path> (it would change
	// <what>); use <backend>".
	Message string
	// Needs is what acts on the field: a real kubelet (RealNodes), or
	// the real control plane (RealControlPlane).
	Needs Backend
	keys  []any // Path as map keys (string) and list indexes (int)
}

// Check returns the fields of obj that csisim does not model, in table
// order. old is the object before an update (nil on create): a field the
// update leaves as it was is not refused again.
func Check(obj, old map[string]any) []Refusal {
	var before func() map[string]any
	if old != nil {
		before = func() map[string]any { return old }
	}
	return check(obj, before)
}

// check is Check with the object before an update made only when it is
// needed (most updates change no refused field): before is nil on create.
func check(obj map[string]any, before func() map[string]any) []Refusal {
	group, kind := groupKind(obj)
	var out []Refusal
	for _, k := range Kinds {
		if k.Group == group && k.Kind == kind {
			out = append(out, Refusal{Path: "kind", keys: []any{"kind"}, Needs: k.Needs,
				Message: message("kind "+kind, k.Changes, k.Needs)})
		}
	}
	var old map[string]any
	for i := range Fields {
		r := &Fields[i]
		pattern, ok := patterns[i][group+"/"+kind]
		if !ok {
			continue
		}
		if r.update != nil {
			if before == nil {
				continue
			}
			if old == nil {
				old = before()
			}
			if !r.update(obj, old) {
				continue
			}
		}
		for _, f := range find(obj, pattern, r.isRefused) {
			if before != nil && r.update == nil {
				if old == nil {
					old = before()
				}
				if unchanged(old, f) {
					continue
				}
			}
			out = append(out, f.refusal(r))
		}
	}
	return out
}

// patterns are the rows' paths, parsed, by row and by the group/kind of
// the objects that hold them.
var patterns = func() []map[string][]segment {
	out := make([]map[string][]segment, len(Fields))
	for i := range Fields {
		r := &Fields[i]
		out[i] = map[string][]segment{}
		if r.PodSpec {
			for _, p := range podSpecs {
				out[i][p.group+"/"+p.kind] = parsePath(p.prefix + "." + r.Path)
			}
			continue
		}
		for _, gk := range r.Kinds {
			if !strings.Contains(gk, "/") {
				gk = "/" + gk // the core group
			}
			out[i][gk] = parsePath(r.Path)
		}
	}
	return out
}()

// Errors is Check as a field.ErrorList (Forbidden, Detail the message),
// as the API server and the scenario loader take it.
func Errors(obj, old map[string]any) field.ErrorList {
	return errorList(Check(obj, old))
}

// NodeErrors is Errors for a cluster whose control plane is real and
// whose kubelets (some of them) are csisim's: only the fields a real
// kubelet acts on (RealNodes).
func NodeErrors(obj map[string]any) field.ErrorList {
	var onNodes []Refusal
	for _, r := range Check(obj, nil) {
		if r.Needs == RealNodes {
			onNodes = append(onNodes, r)
		}
	}
	return errorList(onNodes)
}

func errorList(refusals []Refusal) field.ErrorList {
	var errs field.ErrorList
	for _, r := range refusals {
		errs = append(errs, &field.Error{Type: field.ErrorTypeForbidden, Field: r.Path, BadValue: field.OmitValueType{}, Detail: r.Message})
	}
	return errs
}

func message(path, changes string, needs Backend) string {
	return fmt.Sprintf("csisim does not model %s (it would change %s); use %s", path, changes, needs)
}

func groupKind(obj map[string]any) (string, string) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = "" // the core group: "v1"
	}
	return group, kind
}

// found is one value at a concrete path.
type found struct {
	keys  []any
	value any
}

func (f found) path() string {
	var b strings.Builder
	for _, k := range f.keys {
		switch k := k.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(k) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		}
	}
	return b.String()
}

func (f found) refusal(r *Row) Refusal {
	p := f.path()
	return Refusal{Path: p, keys: f.keys, Needs: r.Needs, Message: message(p, r.Changes, r.Needs)}
}

// segment is one step of a path pattern: a field (or one of several,
// {a,b}), or every item of a list ([*]).
type segment struct {
	names []string
	items bool
}

// parsePath reads a pattern such as
// spec.{containers,initContainers}[*].volumeMounts[*].mountPropagation.
func parsePath(p string) []segment {
	var out []segment
	for _, part := range splitPath(p) {
		name, items := strings.CutSuffix(part, "[*]")
		names := []string{name}
		if strings.HasPrefix(name, "{") {
			names = strings.Split(strings.Trim(name, "{}"), ",")
		}
		out = append(out, segment{names: names})
		if items {
			out = append(out, segment{items: true})
		}
	}
	return out
}

// splitPath splits at the dots outside braces.
func splitPath(p string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range p {
		switch c {
		case '{':
			depth++
		case '}':
			depth--
		case '.':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, p[start:])
}

// find walks obj along the pattern and returns the values refused says
// are refused. container is the container the value is in (nil outside
// one).
func find(obj map[string]any, pattern []segment, refused func(v any, container map[string]any) bool) []found {
	var out []found
	var walk func(v any, rest []segment, keys []any, container map[string]any)
	walk = func(v any, rest []segment, keys []any, container map[string]any) {
		if len(rest) == 0 {
			if refused(v, container) {
				out = append(out, found{keys: append([]any(nil), keys...), value: v})
			}
			return
		}
		seg := rest[0]
		if seg.items {
			list, _ := v.([]any)
			for i, item := range list {
				c := container
				if m, ok := item.(map[string]any); ok && len(keys) > 0 && isContainerList(keys[len(keys)-1]) {
					c = m
				}
				walk(item, rest[1:], append(keys, i), c)
			}
			return
		}
		m, _ := v.(map[string]any)
		for _, name := range seg.names {
			if next, ok := m[name]; ok && next != nil {
				walk(next, rest[1:], append(keys, name), container)
			}
		}
	}
	walk(obj, pattern, nil, nil)
	return out
}

func isContainerList(key any) bool {
	return key == "containers" || key == "initContainers" || key == "ephemeralContainers"
}

// unchanged: old holds the same value at f's path.
func unchanged(old map[string]any, f found) bool {
	var v any = old
	for _, k := range f.keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return false
			}
			v = l[k]
		}
	}
	return reflect.DeepEqual(v, f.value)
}

// statefulSetTemplateChanged: an update changes a StatefulSet's pod
// template under the RollingUpdate strategy (the default, when the
// strategy names no other).
func statefulSetTemplateChanged(obj, old map[string]any) bool {
	spec, _ := obj["spec"].(map[string]any)
	oldSpec, _ := old["spec"].(map[string]any)
	if spec == nil || oldSpec == nil || reflect.DeepEqual(spec["template"], oldSpec["template"]) {
		return false
	}
	strategy, _ := spec["updateStrategy"].(map[string]any)
	t, _ := strategy["type"].(string)
	return t != "OnDelete"
}
