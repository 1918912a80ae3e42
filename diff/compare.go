package diff

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Difference is one thing the two runs disagree on, from the snapshot after
// Step through the one after LastStep (the same difference, unchanged).
type Difference struct {
	Step         int    `json:"step"`
	StepName     string `json:"stepName"`
	LastStep     int    `json:"lastStep"`
	LastStepName string `json:"lastStepName"`
	// Object is "Kind name" (name normalised), "CSI calls on <volume>", or
	// "step" for the steps' outcomes.
	Object string `json:"object"`
	// Field says what differs: "annotation X", "phase", "event reason", ...
	Field string `json:"field"`
	// Sim and Real are the values in each run; nil where there is none.
	Sim  *string `json:"sim"`
	Real *string `json:"real"`
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
	return fmt.Sprintf("%s: %s: sim %s, real %s", where, what, show(d.Sim), show(d.Real))
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
// shorter run, and returns the differences; one that holds unchanged over
// consecutive steps is reported once, with the range of steps.
func Compare(sim, real []Snapshot) []Difference {
	var perStep [][]Difference
	var prevSim, prevReal Snapshot
	for i := 0; i < len(sim) && i < len(real); i++ {
		perStep = append(perStep, compareStep(sim[i], real[i], prevSim, prevReal))
		prevSim, prevReal = sim[i], real[i]
	}
	return condense(perStep)
}

// compareStep compares the snapshots after one step; the previous ones say
// which CSI calls were made during the step.
func compareStep(s, r, prevS, prevR Snapshot) []Difference {
	var out []Difference
	add := func(object, field string, sv, rv *string) {
		if sv == nil && rv == nil || sv != nil && rv != nil && *sv == *rv {
			return
		}
		out = append(out, Difference{Step: s.Step, StepName: s.StepName, Object: object, Field: field, Sim: sv, Real: rv})
	}
	add("step", "outcome", opt(s.Outcome), opt(r.Outcome))
	for _, key := range objectKeys(s.Objects, r.Objects) {
		so, inS := s.Objects[key]
		ro, inR := r.Objects[key]
		if !inS || !inR || so.Exists != ro.Exists {
			add(key, "", ptr(presence(so, inS)), ptr(presence(ro, inR)))
			if !inS || !inR {
				continue
			}
		}
		compareMap(add, key, "label", so.Labels, ro.Labels)
		compareMap(add, key, "annotation", so.Annotations, ro.Annotations)
		add(key, "finalizers", opt(strings.Join(so.Finalizers, ", ")), opt(strings.Join(ro.Finalizers, ", ")))
		add(key, "owners", opt(strings.Join(so.Owners, ", ")), opt(strings.Join(ro.Owners, ", ")))
		add(key, "phase", opt(so.Phase), opt(ro.Phase))
		add(key, "conditions", opt(strings.Join(so.Conditions, ", ")), opt(strings.Join(ro.Conditions, ", ")))
		compareMap(add, key, "", so.Fields, ro.Fields)
		for _, reason := range union(so.Events, ro.Events) {
			in := func(events []string) *string {
				if slices.Contains(events, reason) {
					return ptr(reason)
				}
				return nil
			}
			add(key, "event reason", in(so.Events), in(ro.Events))
			// The wording, where both have the reason.
			if sm, rm := so.EventMessages[reason], ro.EventMessages[reason]; slices.Contains(so.Events, reason) &&
				slices.Contains(ro.Events, reason) && sm != rm {
				add(key, "event "+reason+" message", ptr(sm), ptr(rm))
			}
		}
	}
	for _, volume := range union(slices.Sorted(maps.Keys(s.CSICalls)), slices.Sorted(maps.Keys(r.CSICalls))) {
		during := func(now, before Snapshot) *string {
			calls := now.CSICalls[volume]
			calls = calls[min(len(before.CSICalls[volume]), len(calls)):]
			return opt(strings.Join(calls, ", "))
		}
		add("CSI calls on "+volume, "during the step", during(s, prevS), during(r, prevR))
	}
	return out
}

// presence says whether an object is there, for "only in one run".
func presence(o Object, listed bool) string {
	switch {
	case !listed:
		return "absent"
	case !o.Exists:
		return "gone (events only)"
	}
	return "present"
}

// compareMap compares two maps key by key; field prefixes the key.
func compareMap(add func(object, field string, sv, rv *string), object, field string, s, r map[string]string) {
	for _, k := range union(slices.Sorted(maps.Keys(s)), slices.Sorted(maps.Keys(r))) {
		get := func(m map[string]string) *string {
			if v, ok := m[k]; ok {
				return &v
			}
			return nil
		}
		name := k
		if field != "" {
			name = field + " " + k
		}
		add(object, name, get(s), get(r))
	}
}

// union is the sorted union of two sorted lists.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	sort.Strings(out)
	return slices.Compact(out)
}

// objectKeys are the keys of both snapshots, in the lifecycle's kind
// order, then by name.
func objectKeys(a, b map[string]Object) []string {
	keys := union(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)))
	rank := func(key string) int {
		kind, _, _ := strings.Cut(key, " ")
		if i := slices.Index(kindOrder, kind); i >= 0 {
			return i
		}
		return len(kindOrder)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// condense merges a difference that appears unchanged after consecutive
// steps into one, keeping the order in which differences first appear.
func condense(perStep [][]Difference) []Difference {
	var out []Difference
	open := map[string]int{} // identity -> index in out of a run still open
	for _, diffs := range perStep {
		next := map[string]int{}
		for _, d := range diffs {
			id := fmt.Sprintf("%s\x00%s\x00%s\x00%s", d.Object, d.Field, show(d.Sim), show(d.Real))
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
