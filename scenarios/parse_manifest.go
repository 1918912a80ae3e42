// Reading the manifests a step applies: from a file beside the scenario or
// inline, each object with the line it starts on.

package scenarios

import (
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

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
