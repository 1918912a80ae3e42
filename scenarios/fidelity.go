package scenarios

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"
)

// Explanation is one entry of a scenario's fidelity: section: a difference
// that `csisim diff` reports between the simulator and the real
// components, and why it remains (a behaviour of the real side the
// simulator does not share, the harness, ...). The diff matches each
// difference of its report against the entries (package diff): one that
// matches none is unexplained, and an entry that matches no difference is
// stale. Names are as the report prints them, so that an entry is written
// by copying from a report: no patterns, no variables.
type Explanation struct {
	// File and Line are where the entry is written.
	File string `json:"file"`
	Line int    `json:"line"`
	// FirstStep and LastStep bound the steps the difference may span
	// (its "after steps N-M"); 0: any step.
	FirstStep int `json:"firstStep,omitempty"`
	LastStep  int `json:"lastStep,omitempty"`
	// Object is the object the difference is in, as the report names it
	// ("Node node-c", "CSI calls on <volume of default/data>", "step"),
	// or its first words: its kind ("Node"), "CSI calls".
	Object string `json:"object"`
	// Field is what differs, as the report names it ("taints", "event
	// SnapshotDeletePending source", "" for whether the object is there),
	// or its first words ("event SnapshotDeletePending"); nil: any field.
	Field *string `json:"field,omitempty"`
	// Side, if set, is the run that has a value where the other has none:
	// SideSimulator or SideReal.
	Side string `json:"side,omitempty"`
	// RealNodes, if set, limits the entry to diffs with real kubelets
	// (true, csisim diff --real-nodes) or with simulated ones (false).
	RealNodes *bool `json:"realNodes,omitempty"`
	// Why is the explanation, as written.
	Why string `json:"why"`
}

// The runs an entry's side: names.
const (
	SideSimulator = "simulator"
	SideReal      = "real"
)

// Where names the entry in messages: "x.yaml:12".
func (e Explanation) Where() string { return fmt.Sprintf("%s:%d", e.File, e.Line) }

// String shows what the entry matches, as a report lists a stale one:
// "steps 3-5: Node node-c: taints (only in the real run)".
func (e Explanation) String() string {
	var b strings.Builder
	switch {
	case e.FirstStep == 0:
	case e.FirstStep == e.LastStep:
		fmt.Fprintf(&b, "step %d: ", e.FirstStep)
	default:
		fmt.Fprintf(&b, "steps %d-%d: ", e.FirstStep, e.LastStep)
	}
	b.WriteString(e.Object)
	switch {
	case e.Field == nil:
	case *e.Field == "":
		b.WriteString(": whether it is there")
	default:
		b.WriteString(": " + *e.Field)
	}
	if e.Side != "" {
		fmt.Fprintf(&b, " (only in the %s run)", e.Side)
	}
	if e.RealNodes != nil {
		fmt.Fprintf(&b, " (realNodes: %t)", *e.RealNodes)
	}
	return b.String()
}

var explanationFields = []string{"steps", "object", "field", "side", "realNodes", "why"}

// fidelity reads the fidelity: section, a list of explanations; steps is
// how many steps the scenario has (its finally steps included), which an
// entry's steps: must lie within.
func (p *parser) fidelity(n *yaml.Node, steps int) []Explanation {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.fail(n, "fidelity must be a list of explained differences (- object: ..., why: ...), not %s", describeNode(n))
		return nil
	}
	var out []Explanation
	for i, item := range n.Content {
		if e, ok := p.explanation(item, i+1, steps); ok {
			out = append(out, e)
		}
	}
	return out
}

// explanation reads one entry of fidelity:.
func (p *parser) explanation(n *yaml.Node, index, steps int) (Explanation, bool) {
	what := fmt.Sprintf("fidelity entry %d", index)
	f, ok := p.mapping(n, what, explanationFields...)
	if !ok {
		return Explanation{}, false
	}
	before := len(p.errs)
	e := Explanation{File: p.file, Line: resolve(n).Line}
	if !f.has("object") {
		p.fail(n, "%s needs object: the object the difference is in, as csisim diff's report names it (Node node-c), or its kind (Node)", what)
	} else if s, ok := p.text(f.vals["object"], what+": object"); ok {
		if msg := explainedObjectProblem(s); msg != "" {
			p.fail(f.vals["object"], "%s: object %q: %s", what, s, msg)
		}
		e.Object = s
	}
	if !f.has("why") {
		p.fail(n, "%s needs why: what makes the two runs differ here, for the report to quote", what)
	} else if s, ok := p.text(f.vals["why"], what+": why"); ok {
		if e.Why = strings.Join(strings.Fields(s), " "); e.Why == "" {
			p.fail(f.vals["why"], "%s: why is empty", what)
		}
	}
	if f.has("field") {
		if s, ok := p.text(f.vals["field"], what+": field"); ok {
			if strings.TrimSpace(s) != s || strings.Contains(s, "  ") {
				p.fail(f.vals["field"], "%s: field %q has stray spaces; write it as the report prints it, e.g. event FailedMount", what, s)
			}
			e.Field = &s
		}
	}
	if f.has("side") {
		if s, ok := p.text(f.vals["side"], what+": side"); ok {
			if s != SideSimulator && s != SideReal {
				p.fail(f.vals["side"], "%s: side must be %s or %s (the run that has a value where the other has none), not %q", what, SideSimulator, SideReal, s)
			}
			e.Side = s
		}
	}
	if f.has("realNodes") {
		if b, ok := p.boolean(f.vals["realNodes"], what+": realNodes"); ok {
			e.RealNodes = &b
		}
	}
	if f.has("steps") {
		e.FirstStep, e.LastStep = p.stepRange(f.vals["steps"], what, steps)
	}
	return e, len(p.errs) == before
}

// explainedObjectProblem says what is wrong with an entry's object, or "":
// it names an object as the report does, a kind and then its name.
func explainedObjectProblem(s string) string {
	switch {
	case s == "":
		return "is empty"
	case strings.TrimSpace(s) != s || strings.Contains(s, "  "):
		return "has stray spaces; write it as the report prints it, e.g. PersistentVolumeClaim default/data"
	case s == "step" || s == "CSI calls" || strings.HasPrefix(s, "CSI calls on "):
		return ""
	case strings.Contains(strings.Fields(s)[0], "/"):
		return "write the object as csisim diff's report names it, its Kind and then its name (PersistentVolumeClaim default/data), not kind/name"
	case !unicode.IsUpper(rune(s[0])):
		return "starts with its Kind as the report names it (Node, PersistentVolumeClaim, VolumeSnapshot), or is CSI calls or step"
	}
	return ""
}

// stepRange reads steps: N or N-M, within the scenario's steps.
func (p *parser) stepRange(n *yaml.Node, what string, steps int) (first, last int) {
	s, ok := p.text(n, what+": steps")
	if !ok {
		return 0, 0
	}
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		b = a
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		p.fail(n, "%s: steps must be a step number or a range of them (3, or 3-5), not %q", what, s)
	case first < 1 || last > steps:
		p.fail(n, "%s: steps %s is outside the scenario's steps, 1 to %d", what, s, steps)
	case first > last:
		p.fail(n, "%s: steps %s ends before it starts; write %d-%d", what, s, last, first)
	default:
		return first, last
	}
	return 0, 0
}
