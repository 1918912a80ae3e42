package scenarios

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"slices"

	yaml "go.yaml.in/yaml/v3"
)

// stepList reads a list of steps (steps: or finally:), numbering them from
// first. An item `include: file.yaml` stands for the steps listed in that
// file, read relative to the file that includes it; its steps are parsed
// as if written in place, and their messages point into the included file.
func (p *parser) stepList(n *yaml.Node, field string, first int, finally bool) []Step {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "%s must be a list, each step starting with '- ', not %s", field, describeNode(n))
		return nil
	}
	if len(n.Content) == 0 {
		p.fail(n, "%s is empty", field)
		return nil
	}
	var steps []Step
	for _, sn := range n.Content {
		if file, ok := includeOf(sn); ok {
			steps = append(steps, p.include(file, first+len(steps), finally)...)
			continue
		}
		st := p.parseStep(first+len(steps), sn)
		st.Finally = finally
		steps = append(steps, st)
		for _, name := range savedNames(sn) {
			p.vars[name] = ""
		}
	}
	return steps
}

// finally reads finally:, whose steps are numbered after the n steps.
func (p *parser) finally(n *yaml.Node, steps int) []Step {
	return p.stepList(n, "finally", steps+1, true)
}

// includeOf returns the node naming the file of an `include: file` item.
func includeOf(n *yaml.Node) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 || resolve(n.Content[0]).Value != "include" {
		return nil, false
	}
	return n.Content[1], true
}

// maxIncludeDepth bounds nested includes, beyond any real use.
const maxIncludeDepth = 8

// include parses the steps of the file that n names.
func (p *parser) include(n *yaml.Node, first int, finally bool) []Step {
	name, ok := p.text(n, "include")
	if !ok {
		return nil
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.baseDir, name)
	}
	switch {
	case slices.Contains(p.including, filepath.Clean(path)):
		p.fail(n, "include %s: the file includes itself (through %s)", name, listWords(p.including, ""))
		return nil
	case len(p.including) >= maxIncludeDepth:
		p.fail(n, "include %s: includes nest deeper than %d", name, maxIncludeDepth)
		return nil
	}
	data, err := readInputFile(path)
	if err != nil {
		p.fail(n, "cannot read included file: %v", err)
		return nil
	}
	// Parse the included file as the current file: messages and the
	// steps' File and Line point into it, and its manifest files are
	// relative to it.
	saved := *p
	p.file, p.baseDir, p.source = path, filepath.Dir(path), data
	p.including = append(slices.Clone(p.including), filepath.Clean(path))
	defer func() {
		errs, vars, driverVars := p.errs, p.vars, p.driverVars
		*p = saved
		p.errs, p.vars, p.driverVars = errs, vars, driverVars
	}()
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.failAt(1, "included file is empty; it holds a list of steps")
		} else {
			p.yamlError(err)
		}
		return nil
	}
	return p.stepList(doc.Content[0], "an included file", first, finally)
}
