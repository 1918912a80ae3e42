package nemesis

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
)

func testTargets() Targets {
	return Targets{
		Nodes:             []string{"node-a", "node-b", "node-c"},
		Span:              5 * time.Minute,
		ControllerManager: true,
		Conflicts:         []string{"external-provisioner", "persistentvolume-binder"},
		Sidecars:          []string{"external-provisioner", "csi-snapshotter"},
		Watches:           []Watch{{"attachdetach-controller", "pods"}, {"external-attacher", "volumeattachments"}},
		Injectable:        Kinds,
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	for seed := range uint64(50) {
		a, b := Generate(seed, testTargets()), Generate(seed, testTargets())
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two schedules differ:\n%s\n%s", seed, a, b)
		}
	}
	if reflect.DeepEqual(Generate(1, testTargets()).Events, Generate(2, testTargets()).Events) {
		t.Error("seeds 1 and 2 give the same events")
	}
}

func TestGenerateStaysWithinItsTargets(t *testing.T) {
	tg := testTargets()
	enabledSometimes, disabledSometimes := map[fault.Kind]bool{}, map[fault.Kind]bool{}
	for seed := range uint64(500) {
		s := Generate(seed, tg)
		if len(s.Enabled) == 0 || len(s.Events) == 0 || len(s.Events) > MaxFaults {
			t.Fatalf("seed %d: %d kinds enabled, %d events: want at least 1 of each, at most %d events", seed, len(s.Enabled), len(s.Events), MaxFaults)
		}
		for _, k := range Kinds {
			if slices.Contains(s.Enabled, k) {
				enabledSometimes[k] = true
			} else {
				disabledSometimes[k] = true
			}
		}
		if !slices.IsSortedFunc(s.Events, func(a, b Event) int { return int(a.At - b.At) }) {
			t.Errorf("seed %d: events out of order", seed)
		}
		for _, ev := range s.Events {
			checkEvent(t, seed, tg, s.Enabled, ev)
		}
		checkNoOverlap(t, seed, s)
	}
	for _, k := range Kinds {
		if !enabledSometimes[k] || !disabledSometimes[k] {
			t.Errorf("%s: enabled in some seeds %v, left out in some %v; the swarm should do both", k, enabledSometimes[k], disabledSometimes[k])
		}
	}
}

func checkEvent(t *testing.T, seed uint64, tg Targets, enabled []fault.Kind, ev Event) {
	t.Helper()
	f := ev.Fault
	if !slices.Contains(enabled, f.Kind) {
		t.Errorf("seed %d: %s is not among the enabled kinds %v", seed, f.Kind, enabled)
	}
	if ev.At < 0 || ev.At > tg.Span || ev.At%granularity != 0 {
		t.Errorf("seed %d: %s at %s, want within [0, %s] in steps of %s", seed, f.Kind, ev.At, tg.Span, granularity)
	}
	if f.Node != "" && !slices.Contains(tg.Nodes, f.Node) {
		t.Errorf("seed %d: %s aims at node %q, which the cluster does not have", seed, f.Kind, f.Node)
	}
	wantRecovery := map[fault.Kind]fault.Kind{fault.NodeLoss: fault.NodeReturn, fault.DriverCrash: fault.DriverRestart, fault.CSIHang: fault.CSIHeal}
	switch want, ok := wantRecovery[f.Kind]; {
	case ok && (ev.Recovery == nil || ev.Recovery.Kind != want || ev.Recovery.Node != f.Node || ev.RecoverAfter <= 0):
		t.Errorf("seed %d: %s has recovery %+v after %s, want %s of the same target", seed, f.Kind, ev.Recovery, ev.RecoverAfter, want)
	case !ok && ev.Recovery != nil:
		t.Errorf("seed %d: %s has a recovery %+v", seed, f.Kind, ev.Recovery)
	}
	switch f.Kind {
	case fault.APIConflict:
		if !slices.Contains(tg.Conflicts, f.Component) || f.Times < 1 {
			t.Errorf("seed %d: api-conflict on %q times %d", seed, f.Component, f.Times)
		}
	case fault.WatchDrop:
		if !slices.Contains(tg.Watches, Watch{f.Component, f.Resource}) || f.Times < 1 {
			t.Errorf("seed %d: watch-drop on %q %q times %d", seed, f.Component, f.Resource, f.Times)
		}
	case fault.SidecarRestart:
		if !slices.Contains(tg.Sidecars, f.Component) {
			t.Errorf("seed %d: sidecar-restart of %q", seed, f.Component)
		}
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall:
		if !slices.Contains(controllerMethods, f.CSI.Method) && !slices.Contains(nodeMethods, f.CSI.Method) {
			t.Errorf("seed %d: %s on method %q", seed, f.Kind, f.CSI.Method)
		}
	case fault.DriverCrash:
		if (f.Plugin == fault.Node) != (f.Node != "") {
			t.Errorf("seed %d: driver-crash of plugin %q on node %q", seed, f.Plugin, f.Node)
		}
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		checkAPIServerFault(t, seed, f)
	}
}

// checkAPIServerFault: an API server fault is bounded so that a sweep
// stays fast, and within what a scenario file may say.
func checkAPIServerFault(t *testing.T, seed uint64, f fault.Fault) {
	t.Helper()
	a := f.API
	var bad bool
	switch f.Kind {
	case fault.APIServerDown:
		bad = a.Duration < 5*time.Second || a.Duration > 45*time.Second
	case fault.APISlowWrites:
		bad = a.Latency <= 0 || a.Latency > 5*time.Second || a.Duration <= 0 || a.Duration > time.Minute
	case fault.APIThrottle:
		bad = (f.Times > 0) == (a.Duration > 0) || f.Times > 15 || a.Duration > 20*time.Second ||
			a.RetryAfter < time.Second || a.RetryAfter > 3*time.Second || a.RetryAfter%time.Second != 0
	}
	if bad {
		t.Errorf("seed %d: %s times %d %+v is out of the nemesis's bounds", seed, f.Kind, f.Times, a)
	}
}

// checkNoOverlap: faults that hold a node or plugin never overlap on it.
func checkNoOverlap(t *testing.T, seed uint64, s Schedule) {
	t.Helper()
	held := map[string][]interval{}
	for _, ev := range s.Events {
		key := ""
		switch {
		case ev.Fault.Kind == fault.NodeLoss || ev.Fault.Kind == fault.KubeletRestart || ev.Fault.Kind == fault.DriverCrash && ev.Fault.Node != "":
			key = holdsNode(ev.Fault.Node)
		case ev.Fault.Kind == fault.DriverCrash:
			key = holdsController
		case ev.Fault.Kind == fault.APIServerDown:
			key = holdsAPIServer
		default:
			continue
		}
		iv := interval{ev.At, ev.At + ev.RecoverAfter + ev.Fault.API.Duration}
		if slices.ContainsFunc(held[key], iv.overlaps) {
			t.Errorf("seed %d: two faults hold %s at once:\n%s", seed, key, s)
		}
		held[key] = append(held[key], iv)
	}
}

func TestGenerateLeavesAloneWhatTheScenarioDisturbs(t *testing.T) {
	sc := &scenarios.Scenario{Steps: []scenarios.Step{
		{Fault: &fault.Fault{Kind: fault.NodeLoss, Node: "node-a"}},
		{Fault: &fault.Fault{Kind: fault.CSIError, Node: "node-b", CSI: fault.CSI{Method: "NodeStageVolume"}}},
		{Fault: &fault.Fault{Kind: fault.DriverCrash, Plugin: fault.Controller}},
		{Sleep: &scenarios.Sleep{Duration: time.Second}},
	}}
	tg := testTargets()
	tg.Reserved = Reserved(sc)
	if want := []string{"node/node-a", "plugin/controller"}; !slices.Equal(tg.Reserved, want) {
		t.Fatalf("Reserved = %v, want %v", tg.Reserved, want)
	}
	for seed := range uint64(300) {
		for _, ev := range Generate(seed, tg).Events {
			f := ev.Fault
			holds := f.Kind == fault.NodeLoss || f.Kind == fault.KubeletRestart || f.Kind == fault.DriverCrash
			if holds && (f.Node == "node-a" || f.Plugin == fault.Controller) {
				t.Fatalf("seed %d: %s, which the scenario's own steps disturb", seed, Describe(f))
			}
		}
	}
}

func TestGenerateDrawsOnlyWhatTheClusterHas(t *testing.T) {
	tg := Targets{Nodes: []string{"node-1"}, Span: time.Minute, Injectable: []fault.Kind{fault.NodeLoss, fault.CSIError, fault.WatchDrop}}
	// No watches: watch-drop has no target; the rest cannot be injected.
	if got, want := Available(tg), []fault.Kind{fault.NodeLoss, fault.CSIError}; !slices.Equal(got, want) {
		t.Fatalf("Available = %v, want %v", got, want)
	}
	for seed := range uint64(100) {
		for _, ev := range Generate(seed, tg).Events {
			if k := ev.Fault.Kind; k != fault.NodeLoss && k != fault.CSIError {
				t.Fatalf("seed %d: drew %s", seed, k)
			}
		}
	}
	if s := Generate(1, Targets{Span: time.Minute}); len(s.Events) != 0 {
		t.Errorf("nothing injectable, yet %d events", len(s.Events))
	}
}

func TestTimedPutsRecoveriesAfterTheirFaults(t *testing.T) {
	s := Schedule{Events: []Event{
		{At: 10 * time.Second, Fault: fault.Fault{Kind: fault.NodeLoss, Node: "n"}, Recovery: &fault.Fault{Kind: fault.NodeReturn, Node: "n"}, RecoverAfter: 30 * time.Second},
		{At: 20 * time.Second, Fault: fault.Fault{Kind: fault.KubeletRestart, Node: "m"}},
	}}
	var got []string
	for _, tf := range s.Timed() {
		got = append(got, FormatAt(tf.At)+" "+string(tf.Fault.Kind))
	}
	want := []string{"+10.0s node-loss", "+20.0s kubelet-restart", "+40.0s node-return"}
	if !slices.Equal(got, want) {
		t.Errorf("Timed = %v, want %v", got, want)
	}
	wantLines := []string{"  +10.0s  #1 node-loss on n", "  +20.0s  #2 kubelet-restart on m", "  +40.0s  #1 node-return on n"}
	if got := s.Lines(); !slices.Equal(got, wantLines) {
		t.Errorf("Lines = %q, want %q", got, wantLines)
	}
}
