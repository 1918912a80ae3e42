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
	"k8s.io/apimachinery/pkg/labels"
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

var scenarioFields = []string{"name", "description", "needs", "cluster", "expect", "steps", "finally"}

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
	if f.has("needs") {
		s.Needs = p.needs(f.vals["needs"])
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
	f, ok := p.mapping(n, "cluster", "nodes", "zones", "driverArgs", "driverName", "capacity", "volumeLimit", "multiNode", "flags")
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

// manifestFile reads a manifest file named relative to the scenario file.
func (p *parser) manifestFile(n *yaml.Node) (string, []Manifest) {
	name, ok := p.text(n, "file")
	if !ok {
		return "", nil
	}
	if strings.Contains(name, "${") {
		p.fail(n, "file %q uses a variable; file paths are fixed because files are read when the scenario loads", name)
		return "", nil
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.baseDir, name)
	}
	data, err := readInputFile(path)
	if err != nil {
		p.fail(n, "cannot read manifest file: %v", err)
		return "", nil
	}
	return name, p.manifests(string(data), path, 1)
}

// inlineManifest reads manifest: text. Its lines are numbered from the
// scenario file, so errors in it point into the scenario.
func (p *parser) inlineManifest(n *yaml.Node) []Manifest {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, "manifest must be YAML text: write 'manifest: |' and indent the manifest below it (found %s)", describeNode(n))
		return nil
	}
	firstLine := n.Line
	switch {
	case n.Style&yaml.FoldedStyle != 0:
		p.fail(n, "manifest must be a literal block ('manifest: |'); a folded block ('>') joins its lines and breaks the YAML inside")
		return nil
	case n.Style&yaml.LiteralStyle != 0:
		// The node's line is that of the '|'; the text starts below it.
		firstLine++
	}
	return p.manifests(n.Value, p.file, firstLine)
}

// manifests reads the objects in text, which starts at firstLine of file,
// reporting errors with the current step's context.
func (p *parser) manifests(text, file string, firstLine int) []Manifest {
	bad := false
	for i, line := range strings.Split(text, "\n") {
		if _, err := expandWith(line, p.lookupVar); err != nil {
			p.errs = append(p.errs, &ParseError{File: file, Line: firstLine + i, Step: p.step, Action: p.action, Msg: err.Error()})
			bad = true
		}
	}
	objects, errs := readManifests(text, file, firstLine)
	for _, m := range objects {
		if msg := structuredVarProblem(m.Object); msg != "" {
			p.errs = append(p.errs, &ParseError{File: file, Line: m.Line, Step: p.step, Action: p.action, Msg: m.Describe() + ": " + msg})
			bad = true
		}
	}
	for _, e := range errs {
		e.Step, e.Action = p.step, p.action
		p.errs = append(p.errs, e)
	}
	if bad || len(errs) > 0 {
		return nil
	}
	return objects
}

var checkFields = []string{"object", "namespace", "labelSelector", "jsonPath", "equals", "match", "gone", "count", "save", "csiCalls"}

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
	if f.has("equals") {
		if s, ok := p.str(f.vals["equals"], "equals"); ok {
			c.Equals = &s
		}
		if !f.has("jsonPath") {
			p.fail(f.keys["equals"], "equals needs jsonPath: (the value to compare)")
		}
	}
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

	if c.Gone {
		for _, k := range []string{"jsonPath", "equals", "match", "count", "save"} {
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
	f, ok := p.mapping(n, "csiCalls", "sequence", "contains", "volume")
	if !ok {
		return nil
	}
	c := &CSICallCheck{}
	if f.has("volume") {
		c.Volume, _ = p.nonEmpty(f.vals["volume"], "volume")
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
