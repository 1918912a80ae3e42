package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// The scenario file is decoded by hand from yaml.Node rather than with
// Decoder.KnownFields: walking the nodes gives every message the line of the
// offending key or value, the step it belongs to, and a "did you mean" hint,
// and lets parsing continue after one mistake to report the next.

// fields is a mapping node split into its keys and values.
type fields struct {
	keys map[string]*yaml.Node
	vals map[string]*yaml.Node
}

func (f fields) has(key string) bool { return f.vals[key] != nil }

// resolve follows an alias (*name) to the node it refers to.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describeNode says what a node is, for "must be X, not Y" messages.
func describeNode(n *yaml.Node) string {
	switch n = resolve(n); n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "empty"
}

// mapping checks that n is a mapping whose keys are all allowed, reporting
// unknown and repeated keys, and returns its fields. what names the mapping
// in messages ("wait", "cluster").
func (p *parser) mapping(n *yaml.Node, what string, allowed ...string) (fields, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.fail(n, "%s must be a mapping (key: value), not %s", what, describeNode(n))
		return fields{}, false
	}
	f := fields{keys: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		key := k.Value
		if first, seen := f.keys[key]; seen {
			p.fail(k, "%s is set twice in %s (first at line %d)", key, what, first.Line)
			continue
		}
		if !slices.Contains(allowed, key) {
			if now := renamedKey(key, allowed); now != "" {
				p.fail(k, "key %s is now %s: scenario keys are lowerCamel, as in Kubernetes objects", key, now)
				continue
			}
			hint := didYouMean(key, allowed)
			if hint == "" {
				hint = fmt.Sprintf("; %s takes %s", what, strings.Join(allowed, ", "))
			}
			p.fail(k, "unknown field %q%s", key, hint)
			continue
		}
		f.keys[key], f.vals[key] = k, v
	}
	return f, true
}

// text reads a scalar as text without expanding or checking variables. YAML
// numbers and booleans are taken as written, so equals: 1 means "1".
func (p *parser) text(n *yaml.Node, field string) (string, bool) {
	n = resolve(n)
	switch {
	case n.Kind != yaml.ScalarNode:
		p.fail(n, "%s must be a single value, not %s", field, describeNode(n))
		return "", false
	case n.Tag == "!!null":
		p.fail(n, `%s is empty; write %s: "" if an empty value is meant`, field, field)
		return "", false
	}
	return n.Value, true
}

// str reads a scalar that may use ${var}, checking that every variable it
// uses is set by an earlier step.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	s, ok := p.text(n, field)
	if ok {
		ok = p.checkVars(resolve(n).Line, s)
	}
	return s, ok
}

// nonEmpty is str for values that must not be "".
func (p *parser) nonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := p.str(n, field)
	if ok && s == "" {
		p.fail(n, "%s is empty", field)
		return "", false
	}
	return s, ok
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	n = resolve(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		p.fail(n, "%s must be true or false, not %s", field, describeNode(n))
		return false, false
	}
	return b, true
}

func (p *parser) count(n *yaml.Node, field string) (int, bool) {
	n = resolve(n)
	var i int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil || i < 0 {
		p.fail(n, "%s must be a whole number, 0 or more, not %s", field, describeNode(n))
		return 0, false
	}
	return i, true
}

// duration reads a Go duration such as 30s, 1m30s or 500ms.
func (p *parser) duration(n *yaml.Node, field string) (time.Duration, bool) {
	s, ok := p.text(n, field)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		hint := ""
		if strings.Trim(s, "0123456789.") == "" {
			hint = " (add a unit, e.g. " + s + "s)"
		}
		p.fail(n, "invalid %s %q: %v%s", field, s, err, hint)
		return 0, false
	}
	if d <= 0 {
		p.fail(n, "%s must be positive, not %s", field, s)
		return 0, false
	}
	if msg := durationProblem(field, d); msg != "" {
		p.fail(n, "%s", msg)
		return 0, false
	}
	return d, true
}

// textList reads a list of scalars; each item is passed to check (if not
// nil) with its node, for per-item messages.
func (p *parser) textList(n *yaml.Node, field string, check func(item *yaml.Node, s string) bool) ([]string, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "%s must be a list ([a, b] or one '- item' per line), not %s", field, describeNode(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for _, item := range n.Content {
		s, itemOK := p.text(item, field+" item")
		if itemOK && check != nil {
			itemOK = check(resolve(item), s)
		}
		ok = ok && itemOK
		out = append(out, s)
	}
	return out, ok
}
