package scenarios

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fidelityScenario is a scenario of three steps (and one finally step)
// with the fidelity: section given.
func fidelityScenario(section string) string {
	return `steps:
  - sleep: 1s
  - sleep: 2s
  - sleep: 3s
finally:
  - sleep: 1s
fidelity:
` + section
}

func TestParseFidelity(t *testing.T) {
	field := func(s string) *string { return &s }
	yes := true
	sc, err := Parse("x.yaml", []byte(fidelityScenario(`  - steps: 2-4
    object: Node node-c
    field: taints
    side: real
    why: >-
      The real API server's TaintNodesAtCreation
      admission taints a new node.
  - object: CSI calls
    realNodes: true
    why: retried
  - steps: 3
    object: PersistentVolume
    field: ""
    why: gone later
`)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []Explanation{
		{File: "x.yaml", Line: 8, FirstStep: 2, LastStep: 4, Object: "Node node-c", Field: field("taints"), Side: SideReal,
			Why: "The real API server's TaintNodesAtCreation admission taints a new node."},
		{File: "x.yaml", Line: 15, Object: "CSI calls", RealNodes: &yes, Why: "retried"},
		{File: "x.yaml", Line: 18, FirstStep: 3, LastStep: 3, Object: "PersistentVolume", Field: field(""), Why: "gone later"},
	}
	if !reflect.DeepEqual(sc.Fidelity, want) {
		t.Errorf("fidelity:\n got %+v\nwant %+v", sc.Fidelity, want)
	}
	if got := sc.Fidelity[0].String(); got != "steps 2-4: Node node-c: taints (only in the real run)" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseFidelityErrors(t *testing.T) {
	tests := []struct {
		name, section string
		// want is the one error, "x.yaml:LINE: message".
		want string
	}{
		{"not a list", "  object: Node\n",
			"x.yaml:8: fidelity must be a list of explained differences (- object: ..., why: ...), not a mapping"},
		{"no object", "  - why: because\n",
			"x.yaml:8: fidelity entry 1 needs object: the object the difference is in, as csisim diff's report names it (Node node-c), or its kind (Node)"},
		{"no why", "  - object: Node\n",
			"x.yaml:8: fidelity entry 1 needs why: what makes the two runs differ here, for the report to quote"},
		{"empty why", "  - {object: Node, why: '  '}\n",
			"x.yaml:8: fidelity entry 1: why is empty"},
		{"unknown field", "  - {object: Node, why: x, reason: y}\n",
			`x.yaml:8: unknown field "reason"; fidelity entry 1 takes steps, object, field, side, realNodes, why`},
		{"kubectl-style object", "  - {object: pvc/data, why: x}\n",
			`x.yaml:8: fidelity entry 1: object "pvc/data": write the object as csisim diff's report names it, its Kind and then its name (PersistentVolumeClaim default/data), not kind/name`},
		{"lower-case kind", "  - {object: node node-c, why: x}\n",
			`x.yaml:8: fidelity entry 1: object "node node-c": starts with its Kind as the report names it (Node, PersistentVolumeClaim, VolumeSnapshot), or is CSI calls or step`},
		{"stray spaces in the object", "  - {object: 'Node  node-c', why: x}\n",
			`x.yaml:8: fidelity entry 1: object "Node  node-c": has stray spaces; write it as the report prints it, e.g. PersistentVolumeClaim default/data`},
		{"stray spaces in the field", "  - {object: Node, field: 'taints ', why: x}\n",
			`x.yaml:8: fidelity entry 1: field "taints " has stray spaces; write it as the report prints it, e.g. event FailedMount`},
		{"a side that is no run", "  - {object: Node, side: sim, why: x}\n",
			`x.yaml:8: fidelity entry 1: side must be simulator or real (the run that has a value where the other has none), not "sim"`},
		{"realNodes not a boolean", "  - {object: Node, realNodes: yes please, why: x}\n",
			`x.yaml:8: fidelity entry 1: realNodes must be true or false, not "yes please"`},
		{"steps not a number", "  - {object: Node, steps: first, why: x}\n",
			`x.yaml:8: fidelity entry 1: steps must be a step number or a range of them (3, or 3-5), not "first"`},
		{"steps past the end (finally counted)", "  - {object: Node, steps: 3-5, why: x}\n",
			"x.yaml:8: fidelity entry 1: steps 3-5 is outside the scenario's steps, 1 to 4"},
		{"steps from zero", "  - {object: Node, steps: 0, why: x}\n",
			"x.yaml:8: fidelity entry 1: steps 0 is outside the scenario's steps, 1 to 4"},
		{"steps backwards", "  - {object: Node, steps: 3-2, why: x}\n",
			"x.yaml:8: fidelity entry 1: steps 3-2 ends before it starts; write 2-3"},
		{"the second entry's line", "  - {object: Node, why: x}\n  - {object: Node, steps: 9, why: x}\n",
			"x.yaml:9: fidelity entry 2: steps 9 is outside the scenario's steps, 1 to 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(fidelityScenario(tc.section)), t.TempDir())
			var errs ParseErrors
			if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Error() != tc.want {
				t.Errorf("got\n  %v\nwant the one error\n  %s", err, tc.want)
			}
		})
	}
}

// An entry names the file and line it is written at, for messages.
func TestParseFidelityWhere(t *testing.T) {
	sc, err := Parse("dir/x.yaml", []byte(fidelityScenario("  - {object: step, field: outcome, why: x}\n")), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Fidelity[0].Where(); !strings.HasSuffix(got, "dir/x.yaml:8") {
		t.Errorf("Where() = %q, want dir/x.yaml:8", got)
	}
}
