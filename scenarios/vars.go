package scenarios

import (
	"fmt"
	"slices"
	"strings"
)

// expandVars replaces each ${name} in s with vars[name]. "$${" stands for a
// literal "${", for the rare manifest (a shell command, say) that needs one.
func expandVars(s string, vars map[string]string) (string, error) {
	return expandWith(s, func(name string) (string, error) {
		if value, ok := vars[name]; ok {
			return value, nil
		}
		return "", undefinedVarError(name, vars)
	})
}

// expandWith is expandVars with the variables looked up by lookup, which
// says why a name it does not know is wrong.
func expandWith(s string, lookup func(name string) (string, error)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			// "$${": drop one '$' and keep the rest literally.
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s[i:])
		}
		name := s[i+2 : i+end]
		if !isVarName(name) && !isDriverVarName(name) {
			return "", fmt.Errorf("invalid variable name %q in ${...}: use letters, digits and _", name)
		}
		value, err := lookup(name)
		if err != nil {
			return "", err
		}
		b.WriteString(value)
		s = s[i+end+1:]
	}
}

func undefinedVarError(name string, vars map[string]string) error {
	if len(vars) == 0 {
		return fmt.Errorf("undefined variable ${%s}: no variables are set yet (save: in a wait or assert sets them for later steps)", name)
	}
	known := make([]string, 0, len(vars))
	for k := range vars {
		// The built-in variables are documented; list what steps saved.
		if !strings.HasPrefix(k, driverPrefix) && k != namespaceVar {
			known = append(known, k)
		}
	}
	if len(known) == 0 {
		return fmt.Errorf("undefined variable ${%s}: no step has saved a variable yet (save: in a wait or assert sets them for later steps)", name)
	}
	slices.Sort(known)
	return fmt.Errorf("undefined variable ${%s}%s; set so far: %s", name, didYouMean(name, known), strings.Join(known, ", "))
}

// isVarName reports whether s is a valid variable name: a letter or '_'
// followed by letters, digits or '_'.
func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}

// expander substitutes variables into a copy of a step, remembering the
// first failure so the copying code stays a plain list of fields.
type expander struct {
	vars   map[string]string
	values map[string]any
	// nodes renames the scenario's nodes to the backend's (see
	// NodeNamer), in the step as written, before its variables are
	// substituted.
	nodes map[string]string
	err   error
}

func (x *expander) str(s string) string {
	if x.err != nil {
		return s
	}
	out, err := expandVars(renameNodes(s, x.nodes), x.vars)
	if err != nil {
		x.err = err
		return s
	}
	return out
}

// expandStep returns a copy of s with variables substituted in every string
// value: names, object references, jsonpaths, expected values and manifest
// contents. File paths and CSI method names are not expanded: files are read
// when the scenario loads, and method names are checked then too.
func expandStep(s Step, vars map[string]string) (Step, error) {
	return expandStepWith(s, vars, nil)
}

// expandStepWith is expandStep where a manifest value that is exactly one
// ${name} of values takes that value, typed (see driverValues).
func expandStepWith(s Step, vars map[string]string, values map[string]any) (Step, error) {
	return expandStepFor(s, vars, values, nil)
}

// expandStepFor is expandStepWith with the scenario's nodes renamed as
// nodes says (Runner.nodeNames).
func expandStepFor(s Step, vars map[string]string, values map[string]any, nodes map[string]string) (Step, error) {
	x := &expander{vars: vars, values: values, nodes: nodes}
	out := s
	out.Name = x.str(s.Name)
	switch {
	case s.Apply != nil:
		a := *s.Apply
		a.Namespace = x.str(a.Namespace)
		a.Objects = make([]Manifest, len(s.Apply.Objects))
		for i, m := range s.Apply.Objects {
			a.Objects[i] = Manifest{File: m.File, Line: m.Line, Object: x.value(m.Object).(map[string]any)}
		}
		out.Apply = &a
	case s.Wait != nil:
		out.Wait = &Wait{Check: x.check(s.Wait.Check), Timeout: s.Wait.Timeout}
	case s.Consistently != nil:
		out.Consistently = &Consistently{Check: x.check(s.Consistently.Check), For: s.Consistently.For}
	case s.Assert != nil:
		out.Assert = &Assert{Check: x.check(s.Assert.Check)}
	case s.Delete != nil:
		d := *s.Delete
		d.Object = x.ref(d.Object)
		d.Namespace = x.str(d.Namespace)
		out.Delete = &d
	case s.Patch != nil:
		pt := *s.Patch
		pt.Object = x.ref(pt.Object)
		pt.Namespace = x.str(pt.Namespace)
		pt.Patch = x.value(pt.Patch)
		if pt.Refused != nil {
			r := *pt.Refused
			r.Message, r.MessagePrefix = x.str(r.Message), x.str(r.MessagePrefix)
			pt.Refused = &r
		}
		out.Patch = &pt
	case s.Fault != nil:
		f := *s.Fault
		f.Node = x.str(f.Node)
		f.Claim = x.str(f.Claim)
		f.Namespace = x.str(f.Namespace)
		f.CSI.Volume = x.str(f.CSI.Volume)
		f.CSI.Message = x.str(f.CSI.Message)
		f.Component = x.str(f.Component)
		out.Fault = &f
	}
	if x.err != nil {
		return s, x.err
	}
	return out, nil
}

func (x *expander) ref(r ObjectRef) ObjectRef {
	return ObjectRef{Kind: x.str(r.Kind), Name: x.str(r.Name)}
}

func (x *expander) check(c Check) Check {
	out := c
	out.Object = x.ref(c.Object)
	out.Namespace = x.str(c.Namespace)
	out.LabelSelector = x.str(c.LabelSelector)
	out.JSONPath = x.str(c.JSONPath)
	out.Log = x.str(c.Log)
	if c.Equals != nil {
		e := x.str(*c.Equals)
		out.Equals = &e
	}
	if c.StartsWith != nil {
		e := x.str(*c.StartsWith)
		out.StartsWith = &e
	}
	out.Save = make([]SaveVar, len(c.Save))
	for i, sv := range c.Save {
		out.Save[i] = SaveVar{Name: sv.Name, JSONPath: x.str(sv.JSONPath)}
	}
	if c.Match != nil {
		out.Match = x.value(c.Match)
	}
	if c.CSICalls != nil {
		cc := *c.CSICalls
		cc.Volume = x.str(cc.Volume)
		cc.Driver = x.str(cc.Driver)
		cc.MountFlag = x.str(cc.MountFlag)
		out.CSICalls = &cc
	}
	return out
}

// value deep-copies a decoded manifest value, expanding every string in it.
// Map keys are left alone: they are field names, not values.
func (x *expander) value(v any) any {
	switch v := v.(type) {
	case string:
		if name, ok := strings.CutPrefix(v, "${"); ok && strings.HasSuffix(name, "}") {
			if typed, ok := x.values[strings.TrimSuffix(name, "}")]; ok {
				return copyValue(typed)
			}
		}
		return x.str(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if name, ok := mergedVar(k); ok && e == nil {
				// A mapping variable as a key with no value: its entries
				// join the mapping; keys written beside it win.
				if m, ok := x.values[name].(map[string]any); ok {
					for mk, me := range m {
						if _, written := v[mk]; !written {
							out[mk] = copyValue(me)
						}
					}
				}
				continue
			}
			out[k] = x.value(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = x.value(e)
		}
		return out
	default:
		return v
	}
}

// mergedVars are the mapping variables a manifest may write as a key with
// no value, `${driver.parameters}:`, to add their entries to the mapping
// (the profile's class parameters beside a scenario's own secrets).
var mergedVars = []string{varParameters, varBlockParameters}

// mergedVar returns the variable a mapping key k merges in, if it is one.
func mergedVar(k string) (string, bool) {
	name, ok := strings.CutPrefix(k, "${")
	if !ok || !strings.HasSuffix(name, "}") {
		return "", false
	}
	name = strings.TrimSuffix(name, "}")
	return name, slices.Contains(mergedVars, name)
}

// copyValue deep-copies a typed variable's value, so that no manifest
// shares it with another.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
