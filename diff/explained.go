package diff

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/csisim/csisim/scenarios"
)

// Explained differences. A scenario file's fidelity: section explains the
// differences that remain between the simulator and the real components
// (scenarios.Explanation), and the report marks each difference of
// behaviour by the first entry that matches it, or as unexplained; an
// entry that matches none is stale. Differences only in timing are
// explained by the diff itself (timing.go) and are not matched: an entry
// that matches only such differences is stale too, for the diff has
// learnt to tell them.
//
// Matching is strict and plain, with nothing but whole words: an entry
// matches a difference when
//
//   - its object is the difference's object as the report names it, or
//     that name's first words (its kind: "Node" matches "Node node-c";
//     "CSI calls" every volume's calls);
//   - its field, if it has one, is the difference's field or that field's
//     first words ("event FailedMount" matches "event FailedMount source";
//     "" only whether the object is there);
//   - the difference's steps lie within its steps, if it has them;
//   - its side, if it has one, is the run that has a value where the other
//     has none;
//   - its realNodes, if set, is whether this diff ran real kubelets.

// explains says whether entry e explains difference d.
func explains(e scenarios.Explanation, d Difference) bool {
	if d.Timing || !firstWords(d.Object, e.Object) {
		return false
	}
	if e.Field != nil && !firstWords(d.Field, *e.Field) {
		return false
	}
	if e.FirstStep > 0 && (d.Step < e.FirstStep || d.LastStep > e.LastStep) {
		return false
	}
	switch e.Side {
	case scenarios.SideSimulator:
		return d.Sim != nil && d.Real == nil
	case scenarios.SideReal:
		return d.Real != nil && d.Sim == nil
	}
	return true
}

// firstWords says whether words is s or the words s starts with.
func firstWords(s, words string) bool {
	return s == words || words != "" && strings.HasPrefix(s, words+" ")
}

// applies says whether entry e is about a diff with (realNodes) or
// without real kubelets.
func applies(e scenarios.Explanation, realNodes bool) bool {
	return e.RealNodes == nil || *e.RealNodes == realNodes
}

// explain marks each difference of behaviour with the first entry that
// explains it, or as unexplained, and notes the entries that apply to
// this diff and explain none as stale.
func (r *Report) explain(entries []scenarios.Explanation) {
	realNodes := len(r.RealNodes) > 0
	used := make([]bool, len(entries))
	for i := range r.Differences {
		d := &r.Differences[i]
		d.Explanation, d.Unexplained = nil, !d.Timing
		if d.Timing {
			continue
		}
		for k, e := range entries {
			if applies(e, realNodes) && explains(e, *d) {
				d.Explanation, d.Unexplained, used[k] = &entries[k], false, true
				break
			}
		}
	}
	r.Stale = nil
	for k, e := range entries {
		if applies(e, realNodes) && !used[k] {
			r.Stale = append(r.Stale, e)
		}
	}
}

// Unexplained are the differences of behaviour that no entry of the
// scenario's fidelity: section explains.
func (r *Report) Unexplained() []Difference {
	var out []Difference
	for _, d := range r.Differences {
		if !d.Timing && d.Explanation == nil {
			out = append(out, d)
		}
	}
	return out
}

// CheckExplanations refuses entries of a fidelity: section whose object no
// report can name: a kind the diff does not compare (the parser, which
// does not know what the diff compares, has checked their form). Run
// checks them before it starts a cluster.
func CheckExplanations(entries []scenarios.Explanation) error {
	var errs []error
	for _, e := range entries {
		kind, _, _ := strings.Cut(e.Object, " ")
		if e.Object == "step" || kind == "CSI" && firstWords(e.Object, "CSI calls") || slices.Contains(kindOrder, kind) {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: fidelity: object %q: csisim diff compares no %s; its objects are %s, CSI calls on <volume> and step",
			e.Where(), e.Object, kind, strings.Join(kindOrder, ", ")))
	}
	return errors.Join(errs...)
}

// note is how the text report says whether a difference of behaviour is
// explained: the entry's line and why, or that none explains it.
func (d Difference) note() string {
	switch {
	case d.Timing:
		return ""
	case d.Explanation != nil:
		return fmt.Sprintf("    explained (line %d): %s", d.Explanation.Line, d.Explanation.Why)
	}
	return "    UNEXPLAINED: no entry of the scenario's fidelity: section matches it"
}
