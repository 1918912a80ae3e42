package diff

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/csisim/csisim/scenarios"
)

func TestExplains(t *testing.T) {
	field := func(s string) *string { return &s }
	taints := Difference{Step: 1, LastStep: 2, Object: "Node node-c", Field: "taints", Real: ptr("node.kubernetes.io/not-ready:NoSchedule")}
	event := Difference{Step: 9, LastStep: 9, Object: "VolumeSnapshot default/snapshot-<n>", Field: "event SnapshotDeletePending source",
		Sim: nil, Real: ptr("snapshot-controller")}
	both := Difference{Step: 3, LastStep: 3, Object: "Node node-a", Field: "taints", Sim: ptr("a, b"), Real: ptr("b, a")}
	presence := Difference{Step: 3, LastStep: 3, Object: "PersistentVolume <pv of default/data>", Sim: ptr(present)}
	calls := Difference{Step: 4, LastStep: 5, Object: "CSI calls on <volume of default/data>", Sim: ptr("NodeStageVolume (node-1)")}
	tests := []struct {
		name string
		e    scenarios.Explanation
		d    Difference
		want bool
	}{
		{"the object as the report names it", scenarios.Explanation{Object: "Node node-c"}, taints, true},
		{"the object's kind", scenarios.Explanation{Object: "Node"}, taints, true},
		{"another object of the kind", scenarios.Explanation{Object: "Node node-a"}, taints, false},
		{"a name's start is not its first words", scenarios.Explanation{Object: "Node node"}, taints, false},
		{"another kind", scenarios.Explanation{Object: "Pod"}, taints, false},
		{"CSI calls of every volume", scenarios.Explanation{Object: "CSI calls"}, calls, true},
		{"the field", scenarios.Explanation{Object: "Node", Field: field("taints")}, taints, true},
		{"another field", scenarios.Explanation{Object: "Node", Field: field("labels")}, taints, false},
		{"the field's first words", scenarios.Explanation{Object: "VolumeSnapshot", Field: field("event SnapshotDeletePending")}, event, true},
		{"a field's start is not its first words", scenarios.Explanation{Object: "VolumeSnapshot", Field: field("event Snapshot")}, event, false},
		{"an empty field is whether the object is there", scenarios.Explanation{Object: "PersistentVolume", Field: field("")}, presence, true},
		{"an empty field is no other field", scenarios.Explanation{Object: "Node", Field: field("")}, taints, false},
		{"within the steps", scenarios.Explanation{Object: "Node", FirstStep: 1, LastStep: 2}, taints, true},
		{"starts before the steps", scenarios.Explanation{Object: "Node", FirstStep: 2, LastStep: 3}, taints, false},
		{"lasts past the steps", scenarios.Explanation{Object: "Node", FirstStep: 1, LastStep: 1}, taints, false},
		{"only in the real run", scenarios.Explanation{Object: "Node", Side: scenarios.SideReal}, taints, true},
		{"not only in the simulator", scenarios.Explanation{Object: "Node", Side: scenarios.SideSimulator}, taints, false},
		{"a side where both have a value", scenarios.Explanation{Object: "Node", Side: scenarios.SideReal}, both, false},
		{"the simulator's side where both have a value", scenarios.Explanation{Object: "Node", Side: scenarios.SideSimulator}, both, false},
		{"only in the simulator", scenarios.Explanation{Object: "CSI calls", Side: scenarios.SideSimulator}, calls, true},
		{"timing is the diff's to explain", scenarios.Explanation{Object: "Node"}, Difference{Object: "Node node-c", Field: "taints", Timing: true}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := explains(tc.e, tc.d); got != tc.want {
				t.Errorf("explains(%s, %s) = %t, want %t", tc.e, tc.d, got, tc.want)
			}
		})
	}
}

// explainedReport is a complete report with a difference of behaviour in
// each of two objects and one of timing, explained by entries.
func explainedReport(realNodes []string, entries ...scenarios.Explanation) *Report {
	r := &Report{Scenario: "s", RealNodes: realNodes,
		Sim: RunResult{Backend: "simulator", Passed: true, Steps: 2, Total: 2}, Real: RunResult{Backend: "real", Passed: true, Steps: 2, Total: 2},
		Differences: []Difference{
			{Step: 1, StepName: "a", LastStep: 2, LastStepName: "b", Object: "Node node-c", Field: "taints", Real: ptr("node.kubernetes.io/not-ready:NoSchedule")},
			{Step: 2, StepName: "b", LastStep: 2, LastStepName: "b", Object: "Pod default/app", Field: "phase", Sim: ptr("Running"), Real: ptr("Pending")},
			{Step: 2, StepName: "b", LastStep: 2, LastStepName: "b", Object: "Pod default/app", Field: "event FailedMount count", Sim: ptr("1"), Real: ptr("2"),
				Timing: true, Why: whyCount},
		}}
	r.explain(entries)
	return r
}

func TestReportExplain(t *testing.T) {
	yes, no := true, false
	node := scenarios.Explanation{Line: 20, Object: "Node node-c", Why: "admission taints new nodes"}
	pod := scenarios.Explanation{Line: 30, Object: "Pod", Field: ptr("phase"), Why: "slower"}
	timing := scenarios.Explanation{Line: 40, Object: "Pod", Field: ptr("event FailedMount"), Why: "retries"}
	tests := []struct {
		name      string
		realNodes []string
		entries   []scenarios.Explanation
		// explained are the lines of the entries that explain the two
		// differences of behaviour (0: unexplained); stale the lines of
		// the stale entries.
		explained     [2]int
		stale         []int
		agree, strict bool
	}{
		{name: "none explained", explained: [2]int{0, 0}},
		{name: "one explained", entries: []scenarios.Explanation{node}, explained: [2]int{20, 0}},
		{name: "both explained", entries: []scenarios.Explanation{node, pod}, explained: [2]int{20, 30}, agree: true},
		{name: "the first entry that matches", entries: []scenarios.Explanation{pod, {Line: 50, Object: "Pod", Why: "x"}, node},
			explained: [2]int{20, 30}, stale: []int{50}, agree: true},
		{name: "an entry of timing only is stale", entries: []scenarios.Explanation{node, pod, timing}, explained: [2]int{20, 30},
			stale: []int{40}, agree: true},
		{name: "an entry for real nodes, on simulated ones", entries: []scenarios.Explanation{node, withRealNodes(pod, &yes)},
			explained: [2]int{20, 0}},
		{name: "an entry for real nodes, on real ones", realNodes: []string{"node-1"}, entries: []scenarios.Explanation{node, withRealNodes(pod, &yes)},
			explained: [2]int{20, 30}, agree: true},
		{name: "an entry for simulated nodes does not apply to real ones, nor is it stale", realNodes: []string{"node-1"},
			entries:   []scenarios.Explanation{node, pod, withRealNodes(scenarios.Explanation{Line: 60, Object: "Pod", Why: "x"}, &no)},
			explained: [2]int{20, 30}, agree: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := explainedReport(tc.realNodes, tc.entries...)
			for i, want := range tc.explained {
				d := r.Differences[i]
				switch {
				case want == 0 && (d.Explanation != nil || !d.Unexplained):
					t.Errorf("difference %d: explanation %+v (unexplained %t), want unexplained", i, d.Explanation, d.Unexplained)
				case want != 0 && (d.Explanation == nil || d.Explanation.Line != want || d.Unexplained):
					t.Errorf("difference %d: explanation %+v (unexplained %t), want line %d", i, d.Explanation, d.Unexplained, want)
				}
			}
			if d := r.Differences[2]; d.Explanation != nil || d.Unexplained {
				t.Errorf("the difference of timing is marked: %+v", d)
			}
			var stale []int
			for _, e := range r.Stale {
				stale = append(stale, e.Line)
			}
			if !slices.Equal(stale, tc.stale) {
				t.Errorf("stale lines %v, want %v", stale, tc.stale)
			}
			if got := r.Agree(false); got != tc.agree {
				t.Errorf("Agree(false) = %t, want %t", got, tc.agree)
			}
			if r.Agree(true) {
				t.Error("Agree(true) with a difference of timing")
			}
		})
	}
}

func withRealNodes(e scenarios.Explanation, b *bool) scenarios.Explanation {
	e.RealNodes = b
	return e
}

// The text report quotes each explanation under its difference, says
// which are unexplained and lists the stale entries; the JSON report
// carries the same.
func TestReportExplainedText(t *testing.T) {
	stale := scenarios.Explanation{Line: 50, FirstStep: 1, LastStep: 1, Object: "CSI calls", Why: "x"}
	r := explainedReport(nil, scenarios.Explanation{Line: 20, Object: "Node node-c", Why: "admission taints new nodes"}, stale)
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n2 differences (1 explained by the scenario's fidelity: section, 1 unexplained):\n",
		`after steps 1-2 (a .. b): Node node-c: taints: sim (none), real "node.kubernetes.io/not-ready:NoSchedule"` + "\n    explained (line 20): admission taints new nodes\n",
		`after step 2 (b): Pod default/app: phase: sim "Running", real "Pending"` + "\n    UNEXPLAINED: no entry of the scenario's fidelity: section matches it\n",
		"\nstale: 1 entries of the scenario's fidelity: section explain no difference:\n  line 50: step 1: CSI calls\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report has no %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if d := back.Differences; d[0].Explanation == nil || d[0].Explanation.Why != "admission taints new nodes" || d[0].Unexplained ||
		d[1].Explanation != nil || !d[1].Unexplained || len(back.Stale) != 1 || back.Stale[0].Line != 50 || len(back.Unexplained()) != 1 {
		t.Errorf("JSON report:\n%s", js.String())
	}
}

func TestCheckExplanations(t *testing.T) {
	for _, tc := range []struct {
		object string
		ok     bool
	}{
		{"Node node-c", true}, {"VolumeGroupSnapshotContent", true}, {"CSI calls", true}, {"CSI calls on <volume of default/data>", true},
		{"step", true}, {"Secret default/s", false}, {"CSI", false}, {"Nodes", false},
	} {
		err := CheckExplanations([]scenarios.Explanation{{File: "x.yaml", Line: 3, Object: tc.object}})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %t", tc.object, err, tc.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "x.yaml:3: fidelity: object") {
			t.Errorf("%q: %v, want it to start x.yaml:3:", tc.object, err)
		}
	}
}

// Every library scenario's fidelity: entries name objects a report can
// name.
func TestLibraryExplanations(t *testing.T) {
	files, err := filepath.Glob("../scenarios/library/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no library scenarios: %v", err)
	}
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckExplanations(sc.Fidelity); err != nil {
			t.Error(err)
		}
	}
}
