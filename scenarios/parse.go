package scenarios

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Load reads the scenario file at path and checks it completely, including
// the manifest files it refers to. Errors name the file and line.
func Load(path string) (*Scenario, error) {
	data, err := readInputFile(path)
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	return Parse(path, data, filepath.Dir(path))
}

// Parse checks a scenario held in memory. name is the file name used in
// messages; manifest files are looked up relative to baseDir. The error, if
// any, is a ParseErrors listing every problem found.
func Parse(name string, data []byte, baseDir string) (*Scenario, error) {
	p := &parser{file: name, baseDir: baseDir, vars: map[string]string{}, source: data, including: []string{filepath.Clean(filepath.Join(baseDir, filepath.Base(name)))}}
	s := p.scenario()
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return s, nil
}

// parser holds what messages need to say where they are.
type parser struct {
	file    string
	baseDir string
	source  []byte // the scenario file, to quote lines in hints
	errs    ParseErrors

	// The step being parsed, for messages; 0 outside the steps.
	step   int
	action string

	// vars are the variables set by the steps parsed so far (values are
	// unused), to check ${...} references against.
	vars map[string]string
	// nodes are cluster.nodes, to check the nodes fault steps name.
	nodes []string
	// extraDrivers are drivers:, to check the drivers fault steps name.
	extraDrivers []ExtraDriver
	// driverVars are the driver variables the scenario uses, in order.
	driverVars []string
	// including are the files being included, outermost first, to refuse
	// a file that includes itself.
	including []string
}

func (p *parser) fail(n *yaml.Node, format string, args ...any) {
	p.failAt(resolve(n).Line, format, args...)
}

func (p *parser) failAt(line int, format string, args ...any) {
	p.errs = append(p.errs, &ParseError{File: p.file, Line: line, Step: p.step, Action: p.action, Msg: fmt.Sprintf(format, args...)})
}

// checkVars reports ${...} references in s that no earlier step sets.
func (p *parser) checkVars(line int, s string) bool {
	if _, err := expandWith(s, p.lookupVar); err != nil {
		p.failAt(line, "%v", err)
		return false
	}
	if name := structuredVarIn(s); name != "" {
		p.failAt(line, "${%s} is not text: it can only be a whole value in a manifest (e.g. parameters: ${%s})", name, name)
		return false
	}
	return true
}

var scenarioFields = []string{"name", "description", "needs", "lacks", "cluster", "drivers", "expect", "steps", "finally", "fidelity"}

func (p *parser) scenario() *Scenario {
	dec := yaml.NewDecoder(bytes.NewReader(p.source))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.failAt(1, "file is empty; a scenario needs at least steps:")
		} else {
			p.yamlError(err)
		}
		return nil
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == nil:
		p.fail(&second, "a scenario file holds one YAML document; found a second one (after ---)")
	case !errors.Is(err, io.EOF):
		p.yamlError(err)
	}
	if len(doc.Content) == 0 {
		p.failAt(1, "file is empty; a scenario needs at least steps:")
		return nil
	}
	f, ok := p.mapping(doc.Content[0], "a scenario", scenarioFields...)
	if !ok {
		return nil
	}
	s := &Scenario{File: p.file}
	if f.has("name") {
		s.Name, _ = p.text(f.vals["name"], "name")
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	}
	if f.has("description") {
		s.Description, _ = p.text(f.vals["description"], "description")
	}
	if f.has("cluster") {
		s.Cluster = p.cluster(f.vals["cluster"])
		p.nodes = s.Cluster.Nodes
	}
	if f.has("drivers") {
		s.Drivers = p.drivers(f.vals["drivers"])
		p.extraDrivers = s.Drivers
	}
	if f.has("needs") {
		s.Needs = p.needs(f.vals["needs"])
	}
	if f.has("lacks") {
		s.Lacks = p.capabilities(f.vals["lacks"], "lacks")
		for _, c := range s.Lacks {
			if slices.Contains(s.Needs, c) {
				p.fail(f.vals["lacks"], "lacks: %s is also under needs:", c)
			}
		}
	}
	if f.has("expect") {
		s.Expect = p.expect(f.vals["expect"])
	}
	if !f.has("steps") {
		p.failAt(doc.Content[0].Line, "steps: is missing; a scenario is a list of steps")
		return s
	}
	s.Steps = p.steps(f.vals["steps"])
	if f.has("finally") {
		s.Finally = p.finally(f.vals["finally"], len(s.Steps))
	}
	if f.has("fidelity") {
		s.Fidelity = p.fidelity(f.vals["fidelity"], len(s.Steps)+len(s.Finally))
	}
	s.DriverVars = p.driverVars
	s.Needs = inferNeeds(s)
	return s
}

// yamlError reports a YAML syntax error at the line it names.
func (p *parser) yamlError(err error) {
	line, within, msg := yamlSyntaxError(p.source, err)
	hint := withinHint(msg, within)
	// The braces of ${var} end a {flow: mapping} early; say so, since the
	// YAML message alone does not point at the cause.
	if src := sourceLine(p.source, line); strings.Contains(src, "${") && strings.Count(src, "{") > strings.Count(src, "${") {
		hint = ` (inside {...}, quote values that use variables: 'pv/${pv}')`
	}
	p.failAt(max(line, 1), "invalid YAML: %s%s", msg, hint)
}

// sourceLine returns line n (1-based) of data, or "".
func sourceLine(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

func (p *parser) cluster(n *yaml.Node) Cluster {
	f, ok := p.mapping(n, "cluster", "nodes", "zones", "seLinux", "driverArgs", "driverName", "capacity", "volumeLimit", "multiNode", "flags", "deploy", "healthMonitor", "timing")
	driver := defaultDriverName
	if ok && f.has("driverName") {
		if name, named := p.text(f.vals["driverName"], "driverName"); named {
			// The CSIDriver object's name rules: a DNS-1123 subdomain of
			// at most 63 characters.
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > 63 {
				if len(errs) == 0 {
					errs = []string{"must be no more than 63 characters (a CSIDriver's name)"}
				}
				p.fail(f.vals["driverName"], "invalid driverName %q: %s", name, strings.Join(errs, "; "))
			} else {
				driver = name
			}
		}
	}
	if !ok || !f.has("nodes") {
		if ok && f.has("zones") {
			p.fail(f.keys["zones"], "zones needs nodes: list the nodes the zones are for")
		}
		if ok && f.has("seLinux") {
			p.fail(f.keys["seLinux"], "seLinux needs nodes: list the nodes, then those of them with SELinux enabled")
		}
		var c Cluster
		if ok && f.has("driverName") && driver != defaultDriverName {
			c.DriverName = driver
		}
		if ok {
			p.clusterAsks(f, &c)
		}
		return c
	}
	seen := map[string]bool{}
	nodes, _ := p.textList(f.vals["nodes"], "nodes", func(item *yaml.Node, name string) bool {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			p.fail(item, "invalid node name %q: %s", name, strings.Join(errs, "; "))
			return false
		}
		if msg := socketPathProblem(runRootSample(), name, driver); msg != "" {
			p.fail(item, "%s", msg)
			return false
		}
		if seen[name] {
			p.fail(item, "node %q is listed twice", name)
			return false
		}
		seen[name] = true
		return true
	})
	c := Cluster{Nodes: nodes}
	if f.has("driverName") && driver != defaultDriverName {
		c.DriverName = driver
	}
	if f.has("zones") {
		c.Zones = p.zones(f.vals["zones"], seen)
	}
	if f.has("seLinux") {
		c.SELinux = p.seLinuxNodes(f.vals["seLinux"], seen)
	}
	if f.has("driverArgs") {
		c.DriverArgs, _ = p.textList(f.vals["driverArgs"], "driverArgs", func(item *yaml.Node, arg string) bool {
			if !strings.HasPrefix(arg, "--") {
				p.fail(item, "driver argument %q must be a flag starting with --, e.g. --capacity=10Gi", arg)
				return false
			}
			if msg := driverArgProblem(arg); msg != "" {
				p.fail(item, "%s", msg)
				return false
			}
			return true
		})
	}
	p.clusterAsks(f, &c)
	return c
}

// zones reads node: zone pairs; every node must be listed in nodes and
// every zone be a valid label value (it becomes the node's
// topology.kubernetes.io/zone label).
func (p *parser) zones(n *yaml.Node, nodes map[string]bool) map[string]string {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		p.fail(n, "zones must be a mapping of node: zone, not %s", describeNode(n))
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if !nodes[k.Value] {
			p.fail(k, "zones names node %q, which is not in nodes", k.Value)
			continue
		}
		zone, ok := p.text(v, "zone of "+k.Value)
		if !ok {
			continue
		}
		if errs := validation.IsValidLabelValue(zone); len(errs) > 0 || zone == "" {
			p.fail(v, "invalid zone %q for node %s: %s", zone, k.Value, strings.Join(errs, "; "))
			continue
		}
		out[k.Value] = zone
	}
	return out
}

// seLinuxNodes reads the nodes with SELinux enabled: each must be listed
// in nodes, once.
func (p *parser) seLinuxNodes(n *yaml.Node, nodes map[string]bool) []string {
	listed := map[string]bool{}
	out, _ := p.textList(n, "seLinux", func(item *yaml.Node, name string) bool {
		switch {
		case !nodes[name]:
			p.fail(item, "seLinux names node %q, which is not in nodes", name)
			return false
		case listed[name]:
			p.fail(item, "seLinux lists node %q twice", name)
			return false
		}
		listed[name] = true
		return true
	})
	return out
}

func (p *parser) steps(n *yaml.Node) []Step {
	return p.stepList(n, "steps", 1, false)
}

// savedNames returns the variable names under save: in a step's YAML. It
// reads the raw nodes rather than the parsed step so that a step with a
// mistake elsewhere still declares its variables, and the steps after it
// get no false "undefined variable" errors.
func savedNames(step *yaml.Node) []string {
	var names []string
	step = resolve(step)
	if step.Kind != yaml.MappingNode {
		return nil
	}
	for i := 1; i < len(step.Content); i += 2 {
		action := resolve(step.Content[i])
		if action.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(action.Content); j += 2 {
			save := resolve(action.Content[j+1])
			if action.Content[j].Value != "save" || save.Kind != yaml.MappingNode {
				continue
			}
			for k := 0; k < len(save.Content); k += 2 {
				if name := resolve(save.Content[k]).Value; isVarName(name) {
					names = append(names, name)
				}
			}
		}
	}
	return names
}

func (p *parser) parseStep(index int, n *yaml.Node) Step {
	p.step, p.action = index, ""
	defer func() { p.step, p.action = 0, "" }()

	n = resolve(n)
	st := Step{Index: index, Line: n.Line, File: p.file}
	before := len(p.errs)
	f, ok := p.mapping(n, "a step", append([]string{"name", "needs"}, actionKeys...)...)
	if !ok {
		return st
	}
	// The actions present, in file order, so the message reads like the
	// file and points at the one that is too many.
	var found []string
	for _, k := range actionKeys {
		if f.has(k) {
			found = append(found, k)
		}
	}
	slices.SortFunc(found, func(a, b string) int {
		ka, kb := f.keys[a], f.keys[b]
		return cmp.Or(cmp.Compare(ka.Line, kb.Line), cmp.Compare(ka.Column, kb.Column))
	})
	switch {
	case len(found) == 0 && len(p.errs) > before:
		// An unknown key was already reported; it is most likely the
		// misspelt action, so "found none" would only add noise.
		return st
	case len(found) != 1:
		line := n.Line
		if len(found) > 1 {
			line = f.keys[found[1]].Line
		}
		p.failAt(line, "a step needs exactly one of %s; found %s", strings.Join(actionKeys, ", "), listWords(found, "none"))
		return st
	}
	p.action = found[0]
	v := f.vals[p.action]
	switch p.action {
	case actionApply:
		st.Apply = p.apply(v)
	case actionWait:
		st.Wait = p.wait(v)
	case actionConsistently:
		st.Consistently = p.consistently(v)
	case actionAssert:
		st.Assert = p.assert(v)
	case actionDelete:
		st.Delete = p.delete(v)
	case actionPatch:
		st.Patch = p.patch(v)
	case actionSleep:
		if d, ok := p.duration(v, "sleep"); ok {
			st.Sleep = &Sleep{Duration: d}
		}
	default:
		kind, _ := faultKind(p.action)
		st.Fault = p.faultStep(kind, v)
	}
	if f.has("name") {
		st.Name, _ = p.nonEmpty(f.vals["name"], "name")
	}
	if f.has("needs") {
		st.Needs = p.stepNeeds(f.vals["needs"], st)
	}
	if st.Name == "" && st.Action() != "" {
		st.Name = defaultStepName(st)
	}
	return st
}

// listWords joins words as "a", "a and b", "a, b and c".
func listWords(words []string, none string) string {
	switch len(words) {
	case 0:
		return none
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// defaultStepName names a step after what it does, for steps without name:.
func defaultStepName(st Step) string {
	switch {
	case st.Apply != nil:
		if st.Apply.File != "" {
			return "apply " + st.Apply.File
		}
		const shown = 3
		var names []string
		for i, m := range st.Apply.Objects {
			if i == shown {
				names = append(names, fmt.Sprintf("+%d more", len(st.Apply.Objects)-shown))
				break
			}
			names = append(names, m.Describe())
		}
		return "apply " + strings.Join(names, ", ")
	case st.Wait != nil:
		return "wait " + st.Wait.target()
	case st.Consistently != nil:
		return "consistently " + st.Consistently.target()
	case st.Assert != nil:
		return "assert " + st.Assert.target()
	case st.Delete != nil:
		return "delete " + st.Delete.Object.String()
	case st.Patch != nil:
		return "patch " + st.Patch.Object.String()
	case st.Sleep != nil:
		return "sleep " + st.Sleep.Duration.String()
	case st.Fault != nil:
		return st.Fault.Describe()
	}
	return ""
}

// target is what a check looks at, for step names.
func (c *Check) target() string {
	if c.CSICalls != nil {
		return "csiCalls"
	}
	return c.Object.String()
}

func (p *parser) apply(n *yaml.Node) *Apply {
	f, ok := p.mapping(n, "apply", "file", "manifest", "namespace")
	if !ok {
		return nil
	}
	a := &Apply{}
	if f.has("namespace") {
		a.Namespace, _ = p.nonEmpty(f.vals["namespace"], "namespace")
	}
	switch {
	case f.has("file") && f.has("manifest"):
		p.fail(f.keys["manifest"], "apply takes file or manifest, not both; use two steps")
		return nil
	case f.has("file"):
		a.File, a.Objects = p.manifestFile(f.vals["file"])
	case f.has("manifest"):
		a.Objects = p.inlineManifest(f.vals["manifest"])
	default:
		p.fail(n, "apply needs file: (a manifest file) or manifest: (inline YAML)")
		return nil
	}
	if a.Objects == nil {
		return nil
	}
	return a
}

var propagationPolicies = []string{"Foreground", "Background", "Orphan"}

func (p *parser) delete(n *yaml.Node) *Delete {
	f, ok := p.mapping(n, "delete", "object", "namespace", "propagation", "ignoreNotFound", "force")
	if !ok {
		return nil
	}
	d := &Delete{}
	if !f.has("object") {
		p.fail(n, "delete needs object: (kind/name, e.g. pod/app)")
		return nil
	}
	if s, ok := p.nonEmpty(f.vals["object"], "object"); ok {
		ref, err := parseObjectRef(s)
		switch {
		case err != nil:
			p.fail(f.vals["object"], "%v", err)
		case ref.Name == "":
			p.fail(f.vals["object"], "delete needs kind/name; %q names only a kind", s)
		}
		d.Object = ref
	}
	if f.has("namespace") {
		d.Namespace, _ = p.nonEmpty(f.vals["namespace"], "namespace")
	}
	if f.has("propagation") {
		if s, ok := p.text(f.vals["propagation"], "propagation"); ok {
			for _, policy := range propagationPolicies {
				if strings.EqualFold(s, policy) {
					d.Propagation = policy
				}
			}
			if d.Propagation == "" {
				p.fail(f.vals["propagation"], "propagation must be one of %s, not %q", strings.Join(propagationPolicies, ", "), s)
			}
		}
	}
	if f.has("ignoreNotFound") {
		d.IgnoreNotFound, _ = p.boolean(f.vals["ignoreNotFound"], "ignoreNotFound")
	}
	if f.has("force") {
		d.Force, _ = p.boolean(f.vals["force"], "force")
	}
	return d
}
