// Reading what wait and assert steps check: the object, its fields by
// JSONPath, counts, matches and recorded CSI calls.

package scenarios

import (
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
)

var checkFields = []string{"object", "namespace", "labelSelector", "jsonPath", "equals", "startsWith", "match", "gone", "count", "save", "csiCalls", "log"}

func (p *parser) wait(n *yaml.Node) *Wait {
	f, ok := p.mapping(n, "wait", append(checkFields, "timeout")...)
	if !ok {
		return nil
	}
	w := &Wait{Check: p.check(n, f), Timeout: DefaultWaitTimeout}
	if f.has("timeout") {
		w.Timeout, _ = p.duration(f.vals["timeout"], "timeout")
	}
	return w
}

func (p *parser) assert(n *yaml.Node) *Assert {
	f, ok := p.mapping(n, "assert", checkFields...)
	if !ok {
		return nil
	}
	return &Assert{Check: p.check(n, f)}
}

// check reads the fields shared by wait and assert and checks that they make
// sense together.
func (p *parser) check(n *yaml.Node, f fields) Check {
	var c Check
	switch {
	case f.has("object") && f.has("csiCalls"):
		p.fail(f.keys["csiCalls"], "object and csiCalls can't be combined; use two steps")
		return c
	case f.has("csiCalls"):
		for _, k := range checkFields {
			if k != "csiCalls" && f.has(k) {
				p.fail(f.keys[k], "%s applies to object:, not to csiCalls:", k)
			}
		}
		c.CSICalls = p.csiCalls(f.vals["csiCalls"])
		return c
	case !f.has("object"):
		p.fail(n, "%s needs object: (what to look at, e.g. pvc/data) or csiCalls:", p.action)
		return c
	}

	if s, ok := p.nonEmpty(f.vals["object"], "object"); ok {
		ref, err := parseObjectRef(s)
		if err != nil {
			p.fail(f.vals["object"], "%v", err)
		}
		c.Object = ref
	}
	if f.has("namespace") {
		c.Namespace, _ = p.nonEmpty(f.vals["namespace"], "namespace")
	}
	if f.has("labelSelector") {
		if s, ok := p.str(f.vals["labelSelector"], "labelSelector"); ok {
			c.LabelSelector = s
			if !strings.Contains(s, "${") {
				if _, err := labels.Parse(s); err != nil {
					p.fail(f.vals["labelSelector"], "invalid labelSelector %q: %v", s, err)
				}
			}
		}
	}
	if f.has("jsonPath") {
		c.JSONPath = p.jsonPath(f.vals["jsonPath"], "jsonPath")
	}
	c.Equals, c.StartsWith = p.comparedText(f)
	if f.has("match") {
		c.Match = p.match(f, f.vals["match"])
	}
	if f.has("gone") {
		c.Gone, _ = p.boolean(f.vals["gone"], "gone")
	}
	if f.has("count") {
		if i, ok := p.count(f.vals["count"], "count"); ok {
			c.Count = &i
		}
	}
	if f.has("save") {
		c.Save = p.save(f.vals["save"])
	}
	if f.has("log") {
		c.Log = p.logCheck(f, c)
	}

	if c.Gone {
		for _, k := range []string{"jsonPath", "equals", "startsWith", "match", "count", "save"} {
			if f.has(k) {
				p.fail(f.keys[k], "gone: true can't be combined with %s (a gone object has no fields)", k)
			}
		}
	}
	if c.Object.Kind == "" {
		return c
	}
	if c.Object.Name == "" {
		switch {
		case c.Gone:
			p.fail(f.keys["gone"], "gone needs an object name; to wait until no %s exist, use count: 0", c.Object.Kind)
		case c.Count == nil && c.JSONPath == "" && c.Match == nil:
			p.fail(f.vals["object"], "%q names a kind, not an object: write kind/name, or add count:, jsonPath: or match: to check the list", c.Object.Kind)
		}
	} else {
		for _, k := range []string{"count", "labelSelector"} {
			if f.has(k) {
				p.fail(f.keys[k], "%s applies to a kind without a name (a list), not to %s", k, c.Object)
			}
		}
	}
	return c
}

// comparedText reads equals and startsWith, what a check's jsonpath output
// is compared with: the whole of it, or its beginning.
func (p *parser) comparedText(f fields) (equals, startsWith *string) {
	if f.has("equals") {
		if s, ok := p.str(f.vals["equals"], "equals"); ok {
			equals = &s
		}
		if !f.has("jsonPath") {
			p.fail(f.keys["equals"], "equals needs jsonPath: (the value to compare)")
		}
	}
	if f.has("startsWith") {
		if s, ok := p.nonEmpty(f.vals["startsWith"], "startsWith"); ok {
			startsWith = &s
		}
		switch {
		case !f.has("jsonPath"):
			p.fail(f.keys["startsWith"], "startsWith needs jsonPath: (the value whose beginning to compare)")
		case f.has("equals"):
			p.fail(f.keys["startsWith"], "equals and startsWith can't be combined: equals compares the whole value")
		}
	}
	return equals, startsWith
}

// jsonPath reads and compiles a jsonpath template, unless it uses variables,
// which are only known when the step runs.
func (p *parser) jsonPath(n *yaml.Node, field string) string {
	s, ok := p.nonEmpty(n, field)
	if !ok {
		return ""
	}
	if !strings.Contains(s, "${") {
		if _, err := compileJSONPath(s); err != nil {
			p.fail(n, "invalid %s %q: %v", field, s, err)
		}
	}
	return s
}

func (p *parser) save(n *yaml.Node) []SaveVar {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.fail(n, "save must be a mapping of variable: jsonpath, e.g. {pv: '{.spec.volumeName}'}, not %s", describeNode(n))
		return nil
	}
	var out []SaveVar
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		switch {
		case !isVarName(k.Value):
			p.fail(k, "invalid variable name %q: use letters, digits and _, starting with a letter", k.Value)
			continue
		case seen[k.Value]:
			p.fail(k, "variable %q is saved twice in one step", k.Value)
			continue
		case k.Value == namespaceVar:
			p.fail(k, "${%s} is built-in (the scenario's namespace); save into another name", k.Value)
			continue
		}
		seen[k.Value] = true
		out = append(out, SaveVar{Name: k.Value, JSONPath: p.jsonPath(n.Content[i+1], "save "+k.Value)})
	}
	return out
}

func (p *parser) csiCalls(n *yaml.Node) *CSICallCheck {
	f, ok := p.mapping(n, "csiCalls", "sequence", "contains", "volume", "driver", "mountFlag")
	if !ok {
		return nil
	}
	c := &CSICallCheck{}
	if f.has("volume") {
		c.Volume, _ = p.nonEmpty(f.vals["volume"], "volume")
	}
	if f.has("mountFlag") {
		c.MountFlag, _ = p.nonEmpty(f.vals["mountFlag"], "mountFlag")
	}
	if f.has("driver") {
		c.Driver, c.OtherDriver = p.checkDriver(f.vals["driver"])
	}
	switch {
	case f.has("sequence") && f.has("contains"):
		p.fail(f.keys["contains"], "csiCalls takes sequence (exact) or contains (in order, others allowed between), not both")
	case f.has("sequence"):
		c.Sequence, _ = p.textList(f.vals["sequence"], "sequence", p.checkCSIMethod)
		if c.Sequence == nil {
			c.Sequence = []string{}
		}
	case f.has("contains"):
		c.Contains, _ = p.textList(f.vals["contains"], "contains", p.checkCSIMethod)
		if len(c.Contains) == 0 && resolve(f.vals["contains"]).Kind == yaml.SequenceNode {
			p.fail(f.vals["contains"], "contains is empty; list the calls to look for")
		}
	default:
		p.fail(n, "csiCalls needs sequence: (the exact calls) or contains: (calls in order, others allowed between)")
	}
	return c
}

// checkCSIMethod rejects names that can never match a recorded call.
func (p *parser) checkCSIMethod(n *yaml.Node, name string) bool {
	switch {
	case IsInformationalCSICall(name):
		p.fail(n, "%s is informational and left out of the comparison; remove it", name)
		return false
	case !isCSIMethod(name):
		p.fail(n, "unknown CSI method %q%s", name, didYouMean(name, csiMethods))
		return false
	}
	return true
}

// logCheck reads log: the container of the pod object: whose log (as
// {lines: [...]}) the check looks at. Only jsonPath, equals, startsWith
// and save apply to a log.
func (p *parser) logCheck(f fields, c Check) string {
	container, ok := p.nonEmpty(f.vals["log"], "log")
	if !ok {
		return ""
	}
	if r := c.Object; r.Name == "" || !slices.Contains([]string{"pod", "pods", "po", "Pod"}, r.Kind) {
		p.fail(f.keys["log"], "log: applies to a pod (object: pod/NAME), the container whose log to look at")
	}
	for _, k := range []string{"labelSelector", "match", "gone", "count"} {
		if f.has(k) {
			p.fail(f.keys[k], "%s does not apply to a log (log: looks at {lines: [...]})", k)
		}
	}
	return container
}
