package diff

import (
	"fmt"
	"strings"

	"github.com/csisim/csisim/scenarios"
)

// Difference is one thing the two runs disagree on, from the end of Step
// through the end of LastStep (the same difference, unchanged).
type Difference struct {
	Step         int    `json:"step"`
	StepName     string `json:"stepName"`
	LastStep     int    `json:"lastStep"`
	LastStepName string `json:"lastStepName"`
	// Object is "Kind name" (name normalised), "CSI calls on <volume>", or
	// "step" for the steps' outcomes.
	Object string `json:"object"`
	// Field says what differs: "annotation X", "phase", "event X source",
	// ...; empty for whether the object is there.
	Field string `json:"field"`
	// Sim and Real are the values in each run; nil where there is none.
	Sim  *string `json:"sim"`
	Real *string `json:"real"`
	// Timing says the difference is only in when things happened, not in
	// what happened; Why says how that was told (timing.go).
	Timing bool   `json:"timing,omitempty"`
	Why    string `json:"why,omitempty"`
	// Wrong names the run the scenario says is wrong ("simulator" or
	// "real"): the one that failed a step the other passed.
	Wrong string `json:"wrong,omitempty"`
	// Explanation is the entry of the scenario's fidelity: section that
	// explains a difference of behaviour; Unexplained says none does
	// (explained.go).
	Explanation *scenarios.Explanation `json:"explanation,omitempty"`
	Unexplained bool                   `json:"unexplained,omitempty"`
}

// String renders the difference in one line:
// after step 3 (wait pvc/data): PersistentVolume <pv of default/data>: annotation X: sim "a", real "b"
func (d Difference) String() string {
	where := fmt.Sprintf("after step %d (%s)", d.Step, d.StepName)
	if d.LastStep > d.Step {
		where = fmt.Sprintf("after steps %d-%d (%s .. %s)", d.Step, d.LastStep, d.StepName, d.LastStepName)
	}
	what := d.Object
	if d.Field != "" {
		what += ": " + d.Field
	}
	s := fmt.Sprintf("%s: %s: sim %s, real %s", where, what, show(d.Sim), show(d.Real))
	switch {
	case d.Wrong != "":
		s += fmt.Sprintf(" (the scenario says the %s run is wrong)", d.Wrong)
	case d.Why != "":
		s += " (" + d.Why + ")"
	}
	return s
}

func show(v *string) string {
	if v == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q", *v)
}

func ptr(s string) *string { return &s }

// opt is s, or nil when it is empty.
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Compare compares the snapshots of two runs step by step, up to the
// shorter run, and returns the differences, each marked as timing or not
// (timing.go) with what the runs' histories say each aspect took (nil for
// none: then only the snapshots say it); one that holds unchanged over
// consecutive steps is reported once, with the range of steps.
func Compare(sim, real []Snapshot, simHistory, realHistory History) []Difference {
	n := min(len(sim), len(real))
	j := newJudge(sim[:n], real[:n], simHistory, realHistory)
	var perStep [][]Difference
	for i := range n {
		perStep = append(perStep, j.compareStep(i))
	}
	return condense(perStep)
}

// compareStep compares the snapshots after step i.
func (j *judge) compareStep(i int) []Difference {
	s, r := j.sim[i], j.real[i]
	var out []Difference
	add := func(a aspect, sv, rv *string) {
		if sv == nil && rv == nil || sv != nil && rv != nil && *sv == *rv {
			return
		}
		d := Difference{Step: s.Step, StepName: s.StepName, Object: a.object, Field: a.field, Sim: sv, Real: rv}
		d.Timing, d.Why = j.timing(a, i)
		out = append(out, d)
	}
	if s.Outcome != r.Outcome {
		d := Difference{Step: s.Step, StepName: s.StepName, Object: "step", Field: "outcome", Sim: opt(s.Outcome), Real: opt(r.Outcome)}
		// The scenario's expectation decides: the run that failed the
		// step is wrong, as far as the scenario says.
		switch {
		case s.Outcome == "failed" && r.Outcome == "passed":
			d.Wrong, d.Sim = "simulator", opt("failed: "+s.Detail)
		case r.Outcome == "failed" && s.Outcome == "passed":
			d.Wrong, d.Real = "real", opt("failed: "+r.Detail)
		}
		out = append(out, d)
	}
	sa, ra := j.simAspects[i], j.realAspects[i]
	for _, a := range orderedAspects(sa, ra) {
		if strings.HasPrefix(a.object, "CSI calls on ") {
			add(a, j.callsDuring(j.simCalls, i, a.object), j.callsDuring(j.realCalls, i, a.object))
			continue
		}
		if a.field != "" && !compareField(a.field, sa[aspect{a.object, ""}], ra[aspect{a.object, ""}]) {
			continue // the object's absence is the difference
		}
		if ef, ok := eventCountField(a.field); ok && (!hasAspect(sa, a.object, ef) || !hasAspect(ra, a.object, ef)) {
			continue // the event's absence is the difference
		}
		add(a, get(sa, a), get(ra, a))
	}
	return out
}

// compareField says whether a field of an object is compared, given
// whether each run has the object: not where one run has no trace of it,
// and only its events where one run has only its events.
func compareField(field, simPresence, realPresence string) bool {
	switch {
	case simPresence == "" || realPresence == "":
		return false
	case simPresence == present && realPresence == present:
		return true
	}
	return strings.HasPrefix(field, "event ")
}

func hasAspect(m map[aspect]string, object, field string) bool {
	_, ok := m[aspect{object, field}]
	return ok
}

func get(m map[aspect]string, a aspect) *string {
	if v, ok := m[a]; ok {
		return &v
	}
	return nil
}

// callsDuring shows the calls on a volume made during step i: those after
// the ones the previous step ended with.
func (j *judge) callsDuring(calls []map[string][]Call, i int, object string) *string {
	volume := strings.TrimPrefix(object, "CSI calls on ")
	now := calls[i][volume]
	if i > 0 {
		now = now[min(len(calls[i-1][volume]), len(now)):]
	}
	return opt(callsString(now))
}

// condense merges a difference that appears unchanged after consecutive
// steps into one, keeping the order in which differences first appear.
func condense(perStep [][]Difference) []Difference {
	var out []Difference
	open := map[string]int{} // identity -> index in out of a run still open
	for _, diffs := range perStep {
		next := map[string]int{}
		for _, d := range diffs {
			id := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%t", d.Object, d.Field, show(d.Sim), show(d.Real), d.Timing)
			if i, ok := open[id]; ok {
				out[i].LastStep, out[i].LastStepName = d.Step, d.StepName
				next[id] = i
				continue
			}
			d.LastStep, d.LastStepName = d.Step, d.StepName
			out = append(out, d)
			next[id] = len(out) - 1
		}
		open = next
	}
	return out
}
