package diff

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// snap builds a snapshot after step n from objects and calls.
func snap(n int, name string, calls map[string][]string, objects ...Object) Snapshot {
	s := Snapshot{Step: n, StepName: name, Outcome: "passed", Settled: true, Objects: map[string]Object{}, CSICalls: calls}
	for _, o := range objects {
		s.Objects[o.Key()] = o
	}
	return s
}

func pv(annotations map[string]string, events ...string) Object {
	return Object{Kind: "PersistentVolume", Name: "<pv of default/data>", Exists: true, Annotations: annotations,
		Phase: "Bound", Fields: map[string]string{"claimRef": "default/data"}, Events: events}
}

func TestCompare(t *testing.T) {
	x := map[string]string{"x": "a"}
	tests := []struct {
		name      string
		sim, real []Snapshot
		want      []string
	}{{
		name: "identical",
		sim:  []Snapshot{snap(1, "apply", nil, pv(x))},
		real: []Snapshot{snap(1, "apply", nil, pv(x))},
	}, {
		name: "an annotation's value",
		sim:  []Snapshot{snap(1, "apply", nil), snap(2, "claim", nil), snap(3, "wait pvc/data", nil, pv(x))},
		real: []Snapshot{snap(1, "apply", nil), snap(2, "claim", nil), snap(3, "wait pvc/data", nil, pv(map[string]string{"x": "b"}))},
		want: []string{`after step 3 (wait pvc/data): PersistentVolume <pv of default/data>: annotation x: sim "a", real "b"`},
	}, {
		name: "an object only one run has",
		sim:  []Snapshot{snap(1, "wait pvc/data", nil)},
		real: []Snapshot{snap(1, "wait pvc/data", nil, pv(nil))},
		want: []string{`after step 1 (wait pvc/data): PersistentVolume <pv of default/data>: sim "absent", real "present"`},
	}, {
		name: "a gone object with events against a live one",
		sim:  []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Events: []string{"Scheduled"}})},
		real: []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true, Events: []string{"Scheduled"}})},
		want: []string{`after step 1 (s): Pod default/app: sim "gone (events only)", real "present"`},
	}, {
		name: "an event's wording",
		sim: []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true, Events: []string{"Scheduled"},
			EventMessages: map[string]string{"Scheduled": "assigned to node-1"}})},
		real: []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true, Events: []string{"Scheduled"},
			EventMessages: map[string]string{"Scheduled": "Successfully assigned default/app to node-1"}})},
		want: []string{`after step 1 (s): Pod default/app: event Scheduled message: sim "assigned to node-1", real "Successfully assigned default/app to node-1"`},
	}, {
		name: "event reasons, fields and conditions",
		sim: []Snapshot{snap(1, "s", nil, pv(nil, "ProvisioningSucceeded"),
			Object{Kind: "Node", Name: "node-1", Exists: true, Conditions: []string{"Ready=True (KubeletReady)"},
				Fields: map[string]string{"volumesInUse": "v"}})},
		real: []Snapshot{snap(1, "s", nil, pv(nil, "FailedScheduling", "ProvisioningSucceeded"),
			Object{Kind: "Node", Name: "node-1", Exists: true, Labels: map[string]string{"beta.kubernetes.io/os": "linux"},
				Conditions: []string{"Ready=True (KubeletReady)"}})},
		want: []string{
			`after step 1 (s): PersistentVolume <pv of default/data>: event reason: sim (none), real "FailedScheduling"`,
			`after step 1 (s): Node node-1: label beta.kubernetes.io/os: sim (none), real "linux"`,
			`after step 1 (s): Node node-1: volumesInUse: sim "v", real (none)`,
		},
	}, {
		name: "what kubectl shows of a pod's containers",
		sim: []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true, Phase: "Pending",
			Fields: map[string]string{"containers": "app=running"}})},
		real: []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true, Phase: "Pending",
			Fields: map[string]string{"containers": "app=waiting(ContainerCreating)"}})},
		want: []string{`after step 1 (s): Pod default/app: containers: sim "app=running", real "app=waiting(ContainerCreating)"`},
	}, {
		name: "a difference that lasts is reported once, with its steps",
		sim:  []Snapshot{snap(1, "a", nil, pv(x)), snap(2, "b", nil, pv(x)), snap(3, "c", nil, pv(x)), snap(4, "d", nil, pv(x))},
		real: []Snapshot{snap(1, "a", nil, pv(nil)), snap(2, "b", nil, pv(nil)), snap(3, "c", nil, pv(nil)), snap(4, "d", nil, pv(x))},
		want: []string{`after steps 1-3 (a .. c): PersistentVolume <pv of default/data>: annotation x: sim "a", real (none)`},
	}, {
		name: "CSI calls are compared by what each step added",
		sim: []Snapshot{
			snap(1, "claim", map[string][]string{"<volume of default/data>": {"CreateVolume"}}),
			snap(2, "pod", map[string][]string{"<volume of default/data>": {"CreateVolume", "ControllerPublishVolume"}}),
			snap(3, "wait", map[string][]string{"<volume of default/data>": {"CreateVolume", "ControllerPublishVolume", "NodeStageVolume"}}),
		},
		real: []Snapshot{
			snap(1, "claim", nil),
			snap(2, "pod", map[string][]string{"<volume of default/data>": {"CreateVolume", "ControllerPublishVolume"}}),
			snap(3, "wait", map[string][]string{"<volume of default/data>": {"CreateVolume", "ControllerPublishVolume", "ControllerPublishVolume", "NodeStageVolume"}}),
		},
		want: []string{
			`after step 1 (claim): CSI calls on <volume of default/data>: during the step: sim "CreateVolume", real (none)`,
			`after step 2 (pod): CSI calls on <volume of default/data>: during the step: sim "ControllerPublishVolume", real "CreateVolume, ControllerPublishVolume"`,
			`after step 3 (wait): CSI calls on <volume of default/data>: during the step: sim "NodeStageVolume", real "ControllerPublishVolume, NodeStageVolume"`,
		},
	}, {
		name: "a step that failed in one run; the longer run is compared up to the shorter",
		sim:  []Snapshot{snap(1, "a", nil), snap(2, "b", nil)},
		real: []Snapshot{{Step: 1, StepName: "a", Outcome: "failed", Objects: map[string]Object{}}},
		want: []string{`after step 1 (a): step: outcome: sim "passed", real "failed"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range Compare(tc.sim, tc.real) {
				got = append(got, d.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func TestReport(t *testing.T) {
	sim := []Snapshot{snap(1, "wait pvc/data", nil, pv(map[string]string{"x": "a"}))}
	real := []Snapshot{snap(1, "wait pvc/data", nil, pv(nil))}
	rep := &Report{Scenario: "basic", File: "basic.yaml", Seed: 1,
		Sim:         RunResult{Backend: "simulator", Passed: true, Steps: 1, Total: 1, Snapshots: sim},
		Real:        RunResult{Backend: "real", Passed: true, Steps: 1, Total: 1, Snapshots: real},
		Differences: Compare(sim, real)}
	if rep.Identical() {
		t.Fatal("a report with a difference says identical")
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario basic (basic.yaml), seed 1", "simulator: passed, 1 of 1 steps", "1 differences:",
		`after step 1 (wait pvc/data): PersistentVolume <pv of default/data>: annotation x: sim "a", real (none)`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report has no %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Differences []Difference `json:"differences"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Differences) != 1 || back.Differences[0].Sim == nil || *back.Differences[0].Sim != "a" || back.Differences[0].Real != nil ||
		back.Differences[0].Field != "annotation x" || back.Differences[0].Step != 1 || back.Differences[0].LastStep != 1 {
		t.Errorf("JSON differences: %+v\n%s", back.Differences, js.String())
	}

	same := &Report{Sim: RunResult{Steps: 1}, Real: RunResult{Steps: 1}}
	if !same.Identical() {
		t.Error("a report without differences says they differ")
	}
	if (&Report{Sim: RunResult{Steps: 2}, Real: RunResult{Steps: 1, Error: "step 2 failed"}}).Identical() {
		t.Error("a report where one run stopped early says identical")
	}
}
