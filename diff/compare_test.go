package diff

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// snap builds a snapshot after step n from objects and calls.
func snap(n int, name string, calls map[string][]Call, objects ...Object) Snapshot {
	s := Snapshot{Step: n, StepName: name, Outcome: "passed", Objects: map[string]Object{}, CSICalls: calls}
	for _, o := range objects {
		s.Objects[o.Key()] = o
	}
	return s
}

func pv(annotations map[string]string, events ...string) Object {
	o := Object{Kind: "PersistentVolume", Name: "<pv of default/data>", Exists: true, Annotations: annotations,
		Phase: "Bound", Fields: map[string]string{"claimRef": "default/data"}}
	for _, reason := range events {
		if o.Events == nil {
			o.Events = map[string]EventSummary{}
		}
		o.Events[reason] = EventSummary{Messages: []string{reason + " happened"}, Sources: []string{"persistentvolume-controller"}, Count: 1}
	}
	return o
}

func pod(phase string, events map[string]EventSummary) Object {
	return Object{Kind: "Pod", Name: "default/app", Exists: true, Phase: phase, Events: events}
}

func calls(volume string, cs ...Call) map[string][]Call { return map[string][]Call{volume: cs} }

func call(method, node string) Call { return Call{Method: method, Node: node} }

const vol = "<volume of default/data>"

func TestCompare(t *testing.T) {
	x := map[string]string{"x": "a"}
	scheduled := func(msg string) map[string]EventSummary {
		return map[string]EventSummary{"Scheduled": {Messages: []string{msg}, Sources: []string{"default-scheduler"}, Count: 1}}
	}
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
		name: "an object only one run ever has; its fields are not compared",
		sim:  []Snapshot{snap(1, "wait pvc/data", nil)},
		real: []Snapshot{snap(1, "wait pvc/data", nil, pv(nil))},
		want: []string{`after step 1 (wait pvc/data): PersistentVolume <pv of default/data>: sim (none), real "present"`},
	}, {
		name: "a gone object with events against a live one: only the events are compared",
		sim:  []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Events: scheduled("assigned")})},
		real: []Snapshot{snap(1, "s", nil, pod("Running", scheduled("assigned")))},
		want: []string{`after step 1 (s): Pod default/app: sim "gone (events only)", real "present"`},
	}, {
		name: "an event's wording",
		sim:  []Snapshot{snap(1, "s", nil, pod("Running", scheduled("assigned to node-1")))},
		real: []Snapshot{snap(1, "s", nil, pod("Running", scheduled("Successfully assigned default/app to node-1")))},
		want: []string{`after step 1 (s): Pod default/app: event Scheduled: sim "assigned to node-1", real "Successfully assigned default/app to node-1"`},
	}, {
		name: "an event's source",
		sim: []Snapshot{snap(1, "s", nil, pod("Running", map[string]EventSummary{"Provisioning": {Messages: []string{"m"},
			Sources: []string{"hostpath.csisim.io_csisim"}, Count: 1}}))},
		real: []Snapshot{snap(1, "s", nil, pod("Running", map[string]EventSummary{"Provisioning": {Messages: []string{"m"},
			Sources: []string{"hostpath.csisim.io_<host>_<uid>"}, Count: 1}}))},
		want: []string{`after step 1 (s): Pod default/app: event Provisioning source: sim "hostpath.csisim.io_csisim", real "hostpath.csisim.io_<host>_<uid>"`},
	}, {
		name: "event reasons, fields and conditions, a condition's message apart",
		sim: []Snapshot{snap(1, "s", nil, pv(nil, "ProvisioningSucceeded"),
			Object{Kind: "Node", Name: "node-1", Exists: true, Conditions: map[string]string{"Ready": "True (KubeletReady)"},
				Fields: map[string]string{"volumesInUse": "v"}})},
		real: []Snapshot{snap(1, "s", nil, pv(nil, "FailedScheduling", "ProvisioningSucceeded"),
			Object{Kind: "Node", Name: "node-1", Exists: true, Labels: map[string]string{"beta.kubernetes.io/os": "linux"},
				Conditions: map[string]string{"Ready": "True (KubeletReady): kubelet is posting ready status"}})},
		want: []string{
			`after step 1 (s): PersistentVolume <pv of default/data>: event FailedScheduling: sim (none), real "FailedScheduling happened"`,
			`after step 1 (s): PersistentVolume <pv of default/data>: event FailedScheduling source: sim (none), real "persistentvolume-controller"`,
			`after step 1 (s): Node node-1: label beta.kubernetes.io/os: sim (none), real "linux"`,
			`after step 1 (s): Node node-1: condition Ready message: sim (none), real "kubelet is posting ready status"`,
			`after step 1 (s): Node node-1: volumesInUse: sim "v", real (none)`,
		},
	}, {
		name: "managers",
		sim:  []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true})},
		real: []Snapshot{snap(1, "s", nil, Object{Kind: "Pod", Name: "default/app", Exists: true, Managers: []string{"kubelet Update/status", "scenario Update"}})},
		want: []string{`after step 1 (s): Pod default/app: managers: sim (none), real "kubelet Update/status, scenario Update"`},
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
		real: []Snapshot{snap(1, "a", nil, pv(nil)), snap(2, "b", nil, pv(nil)), snap(3, "c", nil, pv(nil)), snap(4, "d", nil, pv(nil))},
		want: []string{`after steps 1-4 (a .. d): PersistentVolume <pv of default/data>: annotation x: sim "a", real (none)`},
	}, {
		name: "a step that failed in one run: that run is wrong; the longer run is compared up to the shorter",
		sim:  []Snapshot{snap(1, "a", nil), snap(2, "b", nil)},
		real: []Snapshot{{Step: 1, StepName: "a", Outcome: "failed", Detail: "timed out", Objects: map[string]Object{}}},
		want: []string{`after step 1 (a): step: outcome: sim "passed", real "failed: timed out" (the scenario says the real run is wrong)`},
	}, {
		name: "calls one run never made",
		sim:  []Snapshot{snap(1, "a", calls(vol, call("CreateVolume", "")))},
		real: []Snapshot{snap(1, "a", calls(vol, call("CreateVolume", ""), call("DeleteVolume", "")))},
		want: []string{`after step 1 (a): CSI calls on <volume of default/data>: sim "CreateVolume", real "CreateVolume, DeleteVolume"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkCompare(t, tc.sim, tc.real, nil, nil, tc.want) })
	}
}

// Differences only in when things happened are told apart, each with why:
// TestCompareTiming for the objects, TestCompareTimingCalls for the calls.
func TestCompareTiming(t *testing.T) {
	pending, bound := pv(nil), pv(nil)
	pending.Phase = "Pending"
	failedMount := func(count int32) map[string]EventSummary {
		return map[string]EventSummary{"FailedMount": {Messages: []string{"m"}, Sources: []string{"kubelet/node-1"}, Count: count}}
	}
	attach := func(attached string) Object {
		return Object{Kind: "VolumeAttachment", Name: "<attachment>", Exists: true, Fields: map[string]string{"attached": attached}}
	}
	tests := []struct {
		name                 string
		sim, real            []Snapshot
		simHistory, realHist History
		want                 []string
	}{{
		name: "a backoff on either side of a step's end",
		sim:  []Snapshot{snap(1, "a", nil, pending), snap(2, "b", nil, pending), snap(3, "c", nil, bound)},
		real: []Snapshot{snap(1, "a", nil, pending), snap(2, "b", nil, bound), snap(3, "c", nil, bound)},
		want: []string{`after step 2 (b): PersistentVolume <pv of default/data>: phase: sim "Pending", real "Bound" (` + whyValue + `)`},
	}, {
		name: "a value one run never reaches is behaviour",
		sim:  []Snapshot{snap(1, "a", nil, pending), snap(2, "b", nil, pending)},
		real: []Snapshot{snap(1, "a", nil, pending), snap(2, "b", nil, bound)},
		want: []string{`after step 2 (b): PersistentVolume <pv of default/data>: phase: sim "Pending", real "Bound"`},
	}, {
		name: "an object one run makes later",
		sim:  []Snapshot{snap(1, "a", nil), snap(2, "b", nil, bound)},
		real: []Snapshot{snap(1, "a", nil, bound), snap(2, "b", nil, bound)},
		want: []string{`after step 1 (a): PersistentVolume <pv of default/data>: sim (none), real "present" (` + whyValue + `)`},
	}, {
		name: "a value one run has later is compared where both have it",
		sim:  []Snapshot{snap(1, "a", nil, pod("Pending", nil)), snap(2, "b", nil, pod("Pending", failedMount(1)))},
		real: []Snapshot{snap(1, "a", nil, pod("Pending", map[string]EventSummary{"FailedMount": {Messages: []string{"m"},
			Sources: []string{"kubelet/node-1/x"}, Count: 1}})), snap(2, "b", nil, pod("Pending", map[string]EventSummary{"FailedMount": {Messages: []string{"m"},
			Sources: []string{"kubelet/node-1/x"}, Count: 1}}))},
		want: []string{
			`after step 1 (a): Pod default/app: event FailedMount: sim (none), real "m" (` + whyValue + `)`,
			`after step 1 (a): Pod default/app: event FailedMount source: sim (none), real "kubelet/node-1/x" (` + whyLater + `)`,
			`after step 2 (b): Pod default/app: event FailedMount source: sim "kubelet/node-1", real "kubelet/node-1/x"`,
		},
	}, {
		name:       "a value only the history has, between two ends of steps",
		sim:        []Snapshot{snap(1, "a", nil, attach("true"))},
		real:       []Snapshot{snap(1, "a", nil, attach("false")), snap(2, "b", nil, attach("true"))}[:1],
		simHistory: History{aspect{"VolumeAttachment <attachment>", "attached"}: {"false": true, "true": true}},
		realHist:   History{aspect{"VolumeAttachment <attachment>", "attached"}: {"false": true, "true": true}},
		want:       []string{`after step 1 (a): VolumeAttachment <attachment>: attached: sim "true", real "false" (` + whyValue + `)`},
	}, {
		name: "without the history it is behaviour",
		sim:  []Snapshot{snap(1, "a", nil, attach("true"))},
		real: []Snapshot{snap(1, "a", nil, attach("false"))},
		want: []string{`after step 1 (a): VolumeAttachment <attachment>: attached: sim "true", real "false"`},
	}, {
		name: "a retry count; the count of an event one run lacks is not compared",
		sim:  []Snapshot{snap(1, "a", nil, pod("Pending", failedMount(12))), snap(2, "b", nil, pod("Pending", nil))},
		real: []Snapshot{snap(1, "a", nil, pod("Pending", failedMount(2))), snap(2, "b", nil, pod("Pending", failedMount(3)))},
		want: []string{
			`after step 1 (a): Pod default/app: event FailedMount count: sim "12", real "2" (` + whyCount + `)`,
			`after step 2 (b): Pod default/app: event FailedMount: sim (none), real "m" (` + whyValue + `)`,
			`after step 2 (b): Pod default/app: event FailedMount source: sim (none), real "kubelet/node-1" (` + whyValue + `)`,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkCompare(t, tc.sim, tc.real, tc.simHistory, tc.realHist, tc.want) })
	}
}

func TestCompareTimingCalls(t *testing.T) {
	tests := []struct {
		name      string
		sim, real []Snapshot
		want      []string
	}{{
		name: "calls made in other steps",
		sim:  []Snapshot{snap(1, "claim", calls(vol, call("CreateVolume", ""))), snap(2, "wait", calls(vol, call("CreateVolume", "")))},
		real: []Snapshot{snap(1, "claim", nil), snap(2, "wait", calls(vol, call("CreateVolume", "")))},
		want: []string{
			`after step 1 (claim): CSI calls on <volume of default/data>: sim "CreateVolume", real (none) (` + whyCallsSteps + `)`,
			`after step 2 (wait): CSI calls on <volume of default/data>: sim (none), real "CreateVolume" (` + whyCallsSteps + `)`,
		},
	}, {
		name: "calls one run makes late are timing until the call the other never makes",
		sim: []Snapshot{snap(1, "claim", nil), snap(2, "pod", calls(vol, call("CreateVolume", ""))),
			snap(3, "delete", calls(vol, call("CreateVolume", "")))},
		real: []Snapshot{snap(1, "claim", calls(vol, call("CreateVolume", ""))), snap(2, "pod", calls(vol, call("CreateVolume", ""))),
			snap(3, "delete", calls(vol, call("CreateVolume", ""), call("ControllerUnpublishVolume", "node-1")))},
		want: []string{
			`after step 1 (claim): CSI calls on <volume of default/data>: sim (none), real "CreateVolume" (` + whyCallsSteps + `)`,
			`after step 2 (pod): CSI calls on <volume of default/data>: sim "CreateVolume", real (none) (` + whyCallsSteps + `)`,
			`after step 3 (delete): CSI calls on <volume of default/data>: sim (none), real "ControllerUnpublishVolume (node-1)"`,
		},
	}, {
		name: "a call retried more often",
		sim: []Snapshot{snap(1, "a", calls(vol, Call{Method: "NodeStageVolume", Node: "node-1", Status: "Internal"},
			call("NodeStageVolume", "node-1")))},
		real: []Snapshot{snap(1, "a", calls(vol, Call{Method: "NodeStageVolume", Node: "node-1", Status: "Internal"},
			Call{Method: "NodeStageVolume", Node: "node-1", Status: "Internal"}, call("NodeStageVolume", "node-1")))},
		want: []string{`after step 1 (a): CSI calls on <volume of default/data>: sim "NodeStageVolume (node-1, Internal), NodeStageVolume (node-1)", ` +
			`real "NodeStageVolume (node-1, Internal), NodeStageVolume (node-1, Internal), NodeStageVolume (node-1)" (` + whyRetries + `)`},
	}, {
		name: "two nodes' calls interleaved otherwise",
		sim: []Snapshot{snap(1, "a", calls(vol, call("CreateVolume", ""), call("NodePublishVolume", "node-1"),
			call("NodePublishVolume", "node-2")))},
		real: []Snapshot{snap(1, "a", calls(vol, call("CreateVolume", ""), call("NodePublishVolume", "node-2"),
			call("NodePublishVolume", "node-1")))},
		want: []string{`after step 1 (a): CSI calls on <volume of default/data>: sim "CreateVolume, NodePublishVolume (node-1), NodePublishVolume (node-2)", ` +
			`real "CreateVolume, NodePublishVolume (node-2), NodePublishVolume (node-1)" (` + whyNodes + `)`},
	}, {
		name: "one node's calls in another order are behaviour",
		sim:  []Snapshot{snap(1, "a", calls(vol, call("NodeStageVolume", "node-1"), call("NodePublishVolume", "node-1")))},
		real: []Snapshot{snap(1, "a", calls(vol, call("NodePublishVolume", "node-1"), call("NodeStageVolume", "node-1")))},
		want: []string{`after step 1 (a): CSI calls on <volume of default/data>: sim "NodeStageVolume (node-1), NodePublishVolume (node-1)", ` +
			`real "NodePublishVolume (node-1), NodeStageVolume (node-1)"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkCompare(t, tc.sim, tc.real, nil, nil, tc.want) })
	}
}

// checkCompare compares the runs and checks the differences' lines.
func checkCompare(t *testing.T, sim, real []Snapshot, simHistory, realHistory History, want []string) {
	t.Helper()
	var got []string
	for _, d := range Compare(sim, real, simHistory, realHistory) {
		got = append(got, d.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestReport(t *testing.T) {
	sim := []Snapshot{snap(1, "wait pvc/data", nil, pv(map[string]string{"x": "a"})), snap(2, "b", nil, pv(map[string]string{"x": "a"}))}
	real := []Snapshot{snap(1, "wait pvc/data", nil, pv(nil)), snap(2, "b", nil, pv(map[string]string{"x": "a"}))}
	rep := &Report{Scenario: "basic", File: "basic.yaml", Seed: 1,
		Sim:         RunResult{Backend: "simulator", Passed: true, Steps: 2, Total: 2, Snapshots: sim, ClusterTime: 3000000000},
		Real:        RunResult{Backend: "real", Passed: true, Steps: 2, Total: 2, Snapshots: real},
		Differences: Compare(sim, real, nil, nil)}
	if !rep.Agree(false) || rep.Agree(true) {
		t.Fatalf("a report with a timing difference: Agree(false) %t, Agree(true) %t", rep.Agree(false), rep.Agree(true))
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario basic (basic.yaml), seed 1", "simulator: passed, 2 of 2 steps in 0s (3s of cluster time)",
		"no differences\n", "timing: 1 differences only in when things happened:",
		`after step 1 (wait pvc/data): PersistentVolume <pv of default/data>: annotation x: sim "a", real (none) (timing: `} {
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
		back.Differences[0].Field != "annotation x" || back.Differences[0].Step != 1 || back.Differences[0].LastStep != 1 || !back.Differences[0].Timing {
		t.Errorf("JSON differences: %+v\n%s", back.Differences, js.String())
	}

	behaviour := &Report{Sim: RunResult{Steps: 1}, Real: RunResult{Steps: 1},
		Differences: []Difference{{Object: "Pod default/app", Field: "phase", Sim: ptr("Running")}}}
	if behaviour.Agree(false) {
		t.Error("a report with a difference of behaviour says the runs agree")
	}
	if (&Report{Sim: RunResult{Steps: 2}, Real: RunResult{Steps: 1, Error: "step 2 failed"}}).Agree(false) {
		t.Error("a report where one run stopped early says the runs agree")
	}
}

// Where one run has no managedFields at all, the text report says so on
// one line instead of one per object and step.
func TestReportManagersOneLine(t *testing.T) {
	o := func(kind string, managers ...string) Object {
		return Object{Kind: kind, Name: "x", Exists: true, Managers: managers}
	}
	sim := []Snapshot{snap(1, "a", nil, o("Pod"), o("PersistentVolume"))}
	real := []Snapshot{snap(1, "a", nil, o("Pod", "kubelet Update/status"), o("PersistentVolume", "csi-provisioner Update"))}
	rep := &Report{Sim: RunResult{Backend: "simulator", Steps: 1, Snapshots: sim}, Real: RunResult{Backend: "real", Steps: 1, Snapshots: real},
		Differences: Compare(sim, real, nil, nil)}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := `managers: the simulator run's objects have no managedFields at all (2 differences, the first: after step 1 (a): PersistentVolume x: managers: sim (none), real "csi-provisioner Update")`
	if !strings.Contains(text.String(), want) || strings.Contains(text.String(), "kubelet Update/status") {
		t.Errorf("text report:\n%s\nwant the line\n%s", text.String(), want)
	}
	if !strings.Contains(text.String(), "\n2 differences (0 explained by the scenario's fidelity: section, 2 unexplained):\n") {
		t.Errorf("text report does not count both:\n%s", text.String())
	}
}

// The simulator registers its nodes some seconds into the scenario, the
// real cluster before it starts: the simulator's lack of the event is
// timing, other differences in it are not.
func TestCompareStartup(t *testing.T) {
	node := func(message string) Object {
		o := Object{Kind: "Node", Name: "node-1", Exists: true}
		if message != "" {
			o.Events = map[string]EventSummary{"RegisteredNode": {Messages: []string{message}, Sources: []string{"node-controller"}, Count: 1}}
		}
		return o
	}
	real := []Snapshot{snap(1, "a", nil, node("Node node-1 event: Registered Node node-1 in Controller"))}
	var got []string
	for _, d := range Compare([]Snapshot{snap(1, "a", nil, node(""))}, real, nil, nil) {
		got = append(got, d.String())
	}
	want := []string{
		`after step 1 (a): Node node-1: event RegisteredNode: sim (none), real "Node node-1 event: Registered Node node-1 in Controller" (` + whyStartup + `)`,
		`after step 1 (a): Node node-1: event RegisteredNode source: sim (none), real "node-controller" (` + whyStartup + `)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	got = nil
	for _, d := range Compare([]Snapshot{snap(1, "a", nil, node("registered"))}, real, nil, nil) {
		if !d.Timing {
			got = append(got, d.Field)
		}
	}
	if !slices.Equal(got, []string{"event RegisteredNode"}) {
		t.Errorf("behaviour differences in %q, want the wording's", got)
	}
}
