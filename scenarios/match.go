package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A match: check holds when the object contains the partial object it
// gives, compared this way (matchValue):
//   - a mapping matches a mapping that has each of its keys with a
//     matching value; other keys may be there too (a subset);
//   - a list matches a list of the same length whose elements match
//     element by element, in order;
//   - a scalar matches a scalar with the same text: Bound, 3, true;
//   - null matches a field that is missing or null.
// Variables in match values are expanded when the step runs.

// match reads the partial object of match:.
func (p *parser) match(f fields, n *yaml.Node) any {
	if f.has("jsonPath") {
		p.fail(f.keys["match"], "match and jsonPath can't be combined: match compares the whole object (use two steps)")
		return nil
	}
	if resolve(n).Kind != yaml.MappingNode {
		p.fail(n, "match must be a mapping, a part of the object, e.g. {status: {phase: Bound}}; not %s", describeNode(n))
		return nil
	}
	return p.matchValue(n)
}

// matchValue converts a match node to plain values, checking the variables
// in its scalars. Scalars stay text, as written.
func (p *parser) matchValue(n *yaml.Node) any {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if _, dup := out[k.Value]; dup {
				p.fail(k, "match: %s is set twice", k.Value)
				continue
			}
			out[k.Value] = p.matchValue(n.Content[i+1])
		}
		return out
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			out[i] = p.matchValue(e)
		}
		return out
	}
	if n.Tag == "!!null" {
		return nil
	}
	p.checkVars(n.Line, n.Value)
	return n.Value
}

// mismatch is where a match failed: the path and both values.
type mismatch struct {
	path      string
	want, got string
}

func (m mismatch) String() string {
	return fmt.Sprintf("%s: want %s, got %s", m.path, m.want, m.got)
}

// matchObject compares obj with the partial object want, returning the
// first mismatch in key order, or nil.
func matchObject(want, obj any) *mismatch {
	return matchAt("", want, obj, true)
}

func matchAt(path string, want, got any, present bool) *mismatch {
	show := func(v any, present bool) string {
		if !present {
			return "<missing>"
		}
		return describeValue(v)
	}
	at := func(p string) string {
		if p == "" {
			return "."
		}
		return p
	}
	switch w := want.(type) {
	case nil:
		if present && got != nil {
			return &mismatch{path: at(path), want: "<missing>", got: show(got, present)}
		}
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return &mismatch{path: at(path), want: "a mapping", got: show(got, present)}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, has := g[k]
			if m := matchAt(joinPath(path, k), w[k], v, has); m != nil {
				return m
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return &mismatch{path: at(path), want: fmt.Sprintf("a list of %d", len(w)), got: show(got, present)}
		}
		if len(g) != len(w) {
			return &mismatch{path: at(path), want: fmt.Sprintf("%d items", len(w)), got: fmt.Sprintf("%d items %s", len(g), describeValue(g))}
		}
		for i := range w {
			if m := matchAt(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], true); m != nil {
				return m
			}
		}
		return nil
	}
	want2 := fmt.Sprint(want)
	if !present || scalarText(got) != want2 {
		return &mismatch{path: at(path), want: want2, got: show(got, present)}
	}
	return nil
}

// joinPath extends a jsonpath-like path: status.phase, metadata.labels["a/b"].
func joinPath(path, key string) string {
	if strings.ContainsAny(key, "./ []\"") {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// scalarText is a decoded JSON scalar as the text a YAML file would hold:
// 3 not 3.000000, true, "" for null.
func scalarText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case map[string]any, []any:
		return describeValue(v)
	}
	return fmt.Sprint(v)
}

// describeValue shows a value on one line, short.
func describeValue(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > 4 {
			keys = append(keys[:4], "...")
		}
		return "{" + strings.Join(keys, ", ") + "}"
	case []any:
		parts := make([]string, 0, len(v))
		for i, e := range v {
			if i == 3 {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, describeValue(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		if v == "" {
			return `""`
		}
		return v
	case nil:
		return "null"
	}
	return scalarText(v)
}

// describeMatch shows a partial object as its leaves, for messages:
// "status.phase=Bound, spec.storageClassName=fast".
func describeMatch(want any) string {
	var leaves []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(joinPath(path, k), v[k])
			}
		case []any:
			if len(v) == 0 {
				leaves = append(leaves, path+"=[]")
			}
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case nil:
			leaves = append(leaves, path+" missing")
		default:
			leaves = append(leaves, fmt.Sprintf("%s=%v", path, v))
		}
	}
	walk("", want)
	const shown = 4
	if len(leaves) > shown {
		leaves = append(leaves[:shown], fmt.Sprintf("+%d more", len(leaves)-shown))
	}
	return strings.Join(leaves, ", ")
}
