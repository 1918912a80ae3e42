package diff

import (
	"slices"
	"strings"
)

// Telling timing from behaviour. The two clusters run the same steps, but
// not at the same pace: a real controller reacts within milliseconds of a
// write, the simulator's at the instant its loop runs; a kubelet retries
// after a backoff that a real node stretches at random; two nodes' calls
// interleave as they happen to. So at the end of a step the two can show
// the same story at different points. A difference is timing when the
// runs go through the same states and calls, only at other moments:
//
//   - a field, a condition, an event's wording, whether an object is
//     there: each run's value at that step is one the other run also
//     had, at some moment of its run (its History, which has every API
//     write, not only the ends of steps; before an object is made it has
//     none of its fields);
//   - a field one run has not got yet, or any more, where it has the
//     field at another step: its value is compared there;
//   - an event's count, where both runs have the event: how often a retry
//     came round;
//   - the CSI calls on a volume: each run's calls so far are the start of
//     what the other run called by its end, in order — exactly, or
//     counting a retried call once, or comparing each node's calls apart
//     (with the calls about no node in each).
//
// Anything else — a value one run never had, a call one run never made,
// a step one run failed — is a difference of behaviour.

// Why a difference is timing, as the report says it.
const (
	whyValue      = "timing: each run has the other's value at another moment"
	whyCount      = "timing: how often a retry came round"
	whyCallsSteps = "timing: each run makes the other's calls, in other steps"
	whyRetries    = "timing: each run makes the other's calls, retried a different number of times"
	whyNodes      = "timing: each run makes the other's calls on each node, interleaved differently across nodes"
	whyStartup    = "timing: the real cluster registered its nodes before the scenario started, the simulator does 5 s into it"
	whyLater      = "timing: the other run has it at another step, where its value is compared"
)

// judge holds two aligned runs and what a comparison needs of them.
type judge struct {
	sim, real               []Snapshot
	simAspects, realAspects []map[aspect]string
	simCalls, realCalls     []map[string][]Call
	// simTaken, realTaken: every value each aspect took in the run, from
	// its history and its snapshots; simShown, realShown: the aspects the
	// run's snapshots show at some step.
	simTaken, realTaken History
	simShown, realShown map[aspect]bool
}

func newJudge(sim, real []Snapshot, simHistory, realHistory History) *judge {
	j := &judge{sim: sim, real: real, simTaken: History{}, realTaken: History{}, simShown: map[aspect]bool{}, realShown: map[aspect]bool{}}
	for _, s := range sim {
		j.simAspects = append(j.simAspects, s.aspects())
		j.simCalls = append(j.simCalls, s.CSICalls)
	}
	for _, s := range real {
		j.realAspects = append(j.realAspects, s.aspects())
		j.realCalls = append(j.realCalls, s.CSICalls)
	}
	for _, t := range []struct {
		shown   map[aspect]bool
		aspects []map[aspect]string
	}{{j.simShown, j.simAspects}, {j.realShown, j.realAspects}} {
		for _, as := range t.aspects {
			for a := range as {
				t.shown[a] = true
			}
		}
	}
	for _, t := range []struct {
		into History
		from History
		snap []Snapshot
	}{{j.simTaken, simHistory, sim}, {j.realTaken, realHistory, real}} {
		for a, vs := range t.from {
			for v := range vs {
				t.into.add(a, v)
			}
		}
		t.into.addSnapshots(t.snap)
	}
	return j
}

// timing says whether the difference in aspect a after step i is only in
// when things happened, and why.
func (j *judge) timing(a aspect, i int) (bool, string) {
	if strings.HasPrefix(a.object, "CSI calls on ") {
		return j.callsTiming(strings.TrimPrefix(a.object, "CSI calls on "), i)
	}
	if _, ok := eventCountField(a.field); ok {
		return true, whyCount
	}
	sv, rv := get(j.simAspects[i], a), get(j.realAspects[i], a)
	if sv == nil && startupEvent(a) {
		return true, whyStartup
	}
	if j.realTaken.has(a, sv) && j.simTaken.has(a, rv) {
		return true, whyValue
	}
	if sv == nil && j.simShown[a] || rv == nil && j.realShown[a] {
		return true, whyLater
	}
	return false, ""
}

// callsTiming says whether the difference in the calls on a volume after
// step i is timing: each run's calls so far are the start of the other
// run's calls by its end, as they are, without retries, or node by node.
func (j *judge) callsTiming(volume string, i int) (bool, string) {
	last := len(j.sim) - 1
	simNow, realNow := j.simCalls[i][volume], j.realCalls[i][volume]
	simEnd, realEnd := j.simCalls[last][volume], j.realCalls[last][volume]
	nodes := callNodes(simEnd, realEnd, simNow, realNow)
	for _, view := range []struct {
		why  string
		view func([]Call) [][]Call
	}{
		{whyCallsSteps, func(c []Call) [][]Call { return [][]Call{c} }},
		{whyRetries, func(c []Call) [][]Call { return [][]Call{withoutRetries(c)} }},
		{whyNodes, func(c []Call) [][]Call { return lanes(c, nodes) }},
	} {
		if startsOf(view.view(simNow), view.view(realEnd)) && startsOf(view.view(realNow), view.view(simEnd)) {
			return true, view.why
		}
	}
	return false, ""
}

// startsOf says whether each of a is where the same one of b starts.
func startsOf(a, b [][]Call) bool {
	for k := range a {
		if len(a[k]) > len(b[k]) || !slices.Equal(a[k], b[k][:len(a[k])]) {
			return false
		}
	}
	return true
}

// callNodes are the nodes the calls are about, sorted.
func callNodes(lists ...[]Call) []string {
	var nodes []string
	for _, l := range lists {
		for _, c := range l {
			if c.Node != "" {
				nodes = append(nodes, c.Node)
			}
		}
	}
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// withoutRetries counts a call repeated right after itself (the same
// method on the same node with the same outcome) once.
func withoutRetries(calls []Call) []Call {
	return slices.Compact(slices.Clone(calls))
}

// lanes are, for each of nodes in turn, the calls about that node with
// the calls about no node where they came, without retries; the calls
// about no node alone if there are no nodes.
func lanes(calls []Call, nodes []string) [][]Call {
	if len(nodes) == 0 {
		return [][]Call{withoutRetries(calls)}
	}
	out := make([][]Call, len(nodes))
	for k, node := range nodes {
		var lane []Call
		for _, c := range calls {
			if c.Node == "" || c.Node == node {
				lane = append(lane, c)
			}
		}
		out[k] = withoutRetries(lane)
	}
	return out
}

// startupEvent says whether an aspect is of the node lifecycle
// controller's RegisteredNode event about a node: the real run starts
// after it, the simulator's run before it (start.go).
func startupEvent(a aspect) bool {
	kind, _, _ := strings.Cut(a.object, " ")
	field := strings.TrimSuffix(strings.TrimSuffix(a.field, " source"), " count")
	return kind == "Node" && field == "event "+reasonRegisteredNode
}
