package nemesis

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
)

// Kinds are the fault kinds the nemesis draws from, in the order a seed
// considers them. Left out: the recoveries (node-return, driver-restart,
// csi-heal), which it schedules after their fault; and the faults that
// are a misconfiguration or a planted bug rather than something that
// happens to a healthy cluster, and that no later step can undo:
// out-of-service (no step removes the taint), missing-mount-propagation,
// node-plugin-missing, stale-volumeattachment.
var Kinds = []fault.Kind{
	fault.NodeLoss, fault.KubeletRestart, fault.ControllerManagerRestart,
	fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.DriverCrash,
	fault.APIConflict, fault.WatchDrop, fault.CSILostAnswer, fault.DriverCrashMidCall,
	fault.SidecarRestart, fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle,
}

// MaxFaults is the most faults (not counting recoveries) a seed schedules.
const MaxFaults = 4

// granularity is what fault times are rounded to, so that schedules read
// well and a shrunk one can be written as sleeps.
const granularity = 100 * time.Millisecond

// Targets are what a schedule may aim faults at: the scenario's cluster
// as its runs will have it, and how long the scenario runs.
type Targets struct {
	// Nodes are the cluster's worker nodes, each with a kubelet and a node
	// plugin.
	Nodes []string
	// Span is how long the scenario runs without faults, in virtual time:
	// faults are scheduled within it.
	Span time.Duration
	// ControllerManager says that controller-manager-restart can be
	// injected (its controllers are simulated).
	ControllerManager bool
	// Conflicts are the components api-conflict can be aimed at.
	Conflicts []string
	// Sidecars are the components sidecar-restart can restart.
	Sidecars []string
	// Watches are the informers watch-drop can be aimed at.
	Watches []Watch
	// Reserved are the nodes and plugins the scenario's own fault steps
	// disturb (Reserved says how they are named): no fault that would
	// disturb them too is drawn, as the scenario's node-loss of a node the
	// nemesis has already lost would fail, and tell nothing.
	Reserved []string
	// Injectable are the kinds the cluster can inject at all (the mock
	// driver has no process to crash, say); the others are never drawn.
	Injectable []fault.Kind
}

// Watch is one component's informer of one resource.
type Watch struct {
	Component string
	Resource  string // plural: pods, volumeattachments, ...
}

// Event is one scheduled fault and, where it has one, its recovery.
type Event struct {
	// At is the virtual time from the start of the first step.
	At    time.Duration
	Fault fault.Fault
	// Recovery undoes Fault RecoverAfter later: node-return after
	// node-loss, driver-restart after driver-crash, csi-heal after
	// csi-hang. Nil for faults that end on their own.
	Recovery     *fault.Fault
	RecoverAfter time.Duration
}

// Schedule is the faults one seed adds to a run.
type Schedule struct {
	Seed uint64
	// Enabled are the kinds the seed enabled (the swarm); every event is
	// of one of them.
	Enabled []fault.Kind
	// Events are in order of At.
	Events []Event
}

// Available are the kinds of Kinds that t has a target for.
func Available(t Targets) []fault.Kind {
	free := t.freeNodes()
	var out []fault.Kind
	for _, k := range Kinds {
		switch {
		case !slices.Contains(t.Injectable, k),
			(k == fault.NodeLoss || k == fault.KubeletRestart) && len(free) == 0,
			k == fault.DriverCrash && len(free) == 0 && slices.Contains(t.Reserved, holdsController),
			k == fault.ControllerManagerRestart && !t.ControllerManager,
			k == fault.APIConflict && len(t.Conflicts) == 0,
			k == fault.SidecarRestart && len(t.Sidecars) == 0,
			k == fault.WatchDrop && len(t.Watches) == 0:
			continue
		}
		out = append(out, k)
	}
	return out
}

// freeNodes are the nodes the scenario's own fault steps leave alone.
func (t Targets) freeNodes() []string {
	var out []string
	for _, n := range t.Nodes {
		if !slices.Contains(t.Reserved, holdsNode(n)) {
			out = append(out, n)
		}
	}
	return out
}

// Generate draws seed's schedule for t. It is a pure function of its
// arguments: the same seed and targets give the same schedule.
func Generate(seed uint64, t Targets) Schedule {
	// The second word keeps the nemesis's stream apart from the
	// simulation's own, which is seeded with the same seed.
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973))
	s := Schedule{Seed: seed}
	available := Available(t)
	if len(available) == 0 {
		return s
	}
	for _, k := range available {
		if rng.IntN(2) == 0 {
			s.Enabled = append(s.Enabled, k)
		}
	}
	if len(s.Enabled) == 0 {
		s.Enabled = []fault.Kind{available[rng.IntN(len(available))]}
	}
	d := drawer{rng: rng, t: t, free: t.freeNodes()}
	busy := map[string][]interval{}
	for _, key := range t.Reserved {
		busy[key] = []interval{{0, math.MaxInt64 / 2}}
	}
	for range 1 + rng.IntN(MaxFaults) {
		// A fault that would overlap another on the same node or plugin is
		// drawn again: a lost node cannot also restart its kubelet.
		for range 8 {
			ev, key := d.draw(s.Enabled[rng.IntN(len(s.Enabled))])
			iv := interval{ev.At, ev.At + ev.RecoverAfter + ev.Fault.API.Duration}
			if key != "" && slices.ContainsFunc(busy[key], iv.overlaps) {
				continue
			}
			if key != "" {
				busy[key] = append(busy[key], iv)
			}
			s.Events = append(s.Events, ev)
			break
		}
	}
	slices.SortStableFunc(s.Events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	return s
}

// interval is the span a fault holds its node or plugin, from the fault
// to its recovery.
type interval struct{ from, to time.Duration }

// overlaps is true also for intervals less than a second apart, so that
// a fault and the recovery of another never fire at the same moment.
func (a interval) overlaps(b interval) bool {
	return a.from <= b.to+time.Second && b.from <= a.to+time.Second
}

// drawer draws one event of a kind.
type drawer struct {
	rng  *rand.Rand
	t    Targets
	free []string // the nodes faults that hold a node may hold
}

// The CSI methods CSI faults strike: those of the volume lifecycle.
var (
	controllerMethods = []string{"CreateVolume", "DeleteVolume", "ControllerPublishVolume", "ControllerUnpublishVolume"}
	nodeMethods       = []string{"NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume"}
	// errorCodes are errors drivers answer with when something is
	// transiently wrong.
	errorCodes = []codes.Code{codes.Unavailable, codes.Internal, codes.Aborted, codes.ResourceExhausted, codes.DeadlineExceeded}
)

// draw returns an event of kind k and the node or plugin it holds ("" for
// none).
func (d drawer) draw(k fault.Kind) (Event, string) {
	ev := Event{At: d.between(0, d.t.Span), Fault: fault.Fault{Kind: k}}
	f := &ev.Fault
	switch k {
	case fault.NodeLoss:
		f.Node = d.pick(d.free)
		ev.Recovery = &fault.Fault{Kind: fault.NodeReturn, Node: f.Node}
		ev.RecoverAfter = d.between(10*time.Second, 2*time.Minute)
		return ev, holdsNode(f.Node)
	case fault.KubeletRestart:
		f.Node = d.pick(d.free)
		return ev, holdsNode(f.Node)
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall:
		d.csiTarget(f)
		switch k {
		case fault.CSIError:
			f.CSI.Code = errorCodes[d.rng.IntN(len(errorCodes))]
			f.Times = 1 + d.rng.IntN(3)
		case fault.CSIDelay:
			f.CSI.Delay = time.Duration(1+d.rng.IntN(30)) * time.Second
			f.Times = 1 + d.rng.IntN(2)
		case fault.CSIHang:
			ev.Recovery = &fault.Fault{Kind: fault.CSIHeal, Node: f.Node, CSI: fault.CSI{Method: f.CSI.Method}}
			ev.RecoverAfter = d.between(5*time.Second, 90*time.Second)
		case fault.CSILostAnswer, fault.DriverCrashMidCall:
			f.Times = 1 + d.rng.IntN(2)
			f.CSI.FirstAttempt = d.rng.IntN(2) == 0
		}
		return ev, ""
	case fault.DriverCrash:
		f.Plugin = fault.Controller
		key := holdsController
		if len(d.free) > 0 && d.rng.IntN(2) == 0 {
			f.Plugin, f.Node = fault.Node, d.pick(d.free)
			key = holdsNode(f.Node)
		}
		ev.Recovery = &fault.Fault{Kind: fault.DriverRestart, Plugin: f.Plugin, Node: f.Node}
		ev.RecoverAfter = d.between(2*time.Second, time.Minute)
		return ev, key
	case fault.SidecarRestart:
		f.Component = d.pick(d.t.Sidecars)
	case fault.APIConflict:
		f.Component = d.pick(d.t.Conflicts)
		f.Times = 1 + d.rng.IntN(5)
	case fault.WatchDrop:
		w := d.t.Watches[d.rng.IntN(len(d.t.Watches))]
		f.Component, f.Resource = w.Component, w.Resource
		f.Times = 1 + d.rng.IntN(3)
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return ev, d.apiServer(f)
	}
	return ev, ""
}

// apiServer draws an API server fault, short enough that a sweep stays
// fast (an outage costs its scenario up to two minutes of relists), and
// returns what it holds: one outage, one slowing and one throttle at a
// time, as a second would end the first's early.
func (d drawer) apiServer(f *fault.Fault) string {
	switch f.Kind {
	case fault.APIServerDown:
		f.API.Duration = d.between(5*time.Second, 45*time.Second)
		return holdsAPIServer
	case fault.APISlowWrites:
		f.API.Latency = d.between(100*time.Millisecond, 5*time.Second)
		f.API.Duration = d.between(5*time.Second, time.Minute)
		return "api/slow-writes"
	}
	f.API.RetryAfter = time.Duration(1+d.rng.IntN(3)) * time.Second
	if d.rng.IntN(2) == 0 {
		f.Times = 1 + d.rng.IntN(15)
	} else {
		f.API.Duration = d.between(2*time.Second, 20*time.Second)
	}
	return "api/throttle"
}

// csiTarget picks the method of a CSI fault, and for a node method
// sometimes one node's plugin only.
func (d drawer) csiTarget(f *fault.Fault) {
	if d.rng.IntN(2) == 0 {
		f.CSI.Method = d.pick(controllerMethods)
		return
	}
	f.CSI.Method = d.pick(nodeMethods)
	if len(d.t.Nodes) > 0 && d.rng.IntN(2) == 0 {
		f.Node = d.pick(d.t.Nodes)
	}
}

func (d drawer) pick(from []string) string { return from[d.rng.IntN(len(from))] }

// between draws a duration in [lo, hi], in steps of granularity.
func (d drawer) between(lo, hi time.Duration) time.Duration {
	steps := max(hi-lo, 0) / granularity
	return lo + granularity*time.Duration(d.rng.Int64N(int64(steps)+1))
}

// Reserved are the nodes and plugins the fault steps of sc disturb, as
// Targets.Reserved names them: "node/NAME" for a node whose kubelet or
// node plugin a step stops or restarts, "plugin/controller" for the
// controller plugin.
func Reserved(sc *scenarios.Scenario) []string {
	var out []string
	for _, st := range sc.Steps {
		f := st.Fault
		if f == nil {
			continue
		}
		switch f.Kind {
		case fault.NodeLoss, fault.NodeReturn, fault.OutOfService, fault.MissingMountPropagation, fault.KubeletRestart, fault.NodePluginMissing:
			out = append(out, holdsNode(f.Node))
		case fault.APIServerDown:
			out = append(out, holdsAPIServer)
		case fault.DriverCrash, fault.DriverRestart:
			if f.Plugin == fault.Controller {
				out = append(out, holdsController)
			} else {
				out = append(out, holdsNode(f.Node))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// What a fault holds while it lasts, so that two never overlap: a node
// (its kubelet and node plugin), the controller plugin, or the API server
// (an outage).
const (
	holdsController = "plugin/controller"
	holdsAPIServer  = "api/server"
)

func holdsNode(node string) string { return "node/" + node }

// Timed is the schedule as the runner fires it: every fault and every
// recovery at its time, in order of time (a fault before its recovery).
func (s Schedule) Timed() []scenarios.TimedFault {
	var out []scenarios.TimedFault
	for _, ev := range s.Events {
		out = append(out, scenarios.TimedFault{At: ev.At, Fault: ev.Fault})
		if ev.Recovery != nil {
			out = append(out, scenarios.TimedFault{At: ev.At + ev.RecoverAfter, Fault: *ev.Recovery})
		}
	}
	slices.SortStableFunc(out, func(a, b scenarios.TimedFault) int { return cmp.Compare(a.At, b.At) })
	return out
}

// Lines are the schedule, one line per fault or recovery in order of
// time: "+12.3s  #1 node-loss on node-1".
func (s Schedule) Lines() []string {
	type line struct {
		at   time.Duration
		text string
	}
	var lines []line
	for i, ev := range s.Events {
		lines = append(lines, line{ev.At, fmt.Sprintf("#%d %s", i+1, Describe(ev.Fault))})
		if ev.Recovery != nil {
			lines = append(lines, line{ev.At + ev.RecoverAfter, fmt.Sprintf("#%d %s", i+1, Describe(*ev.Recovery))})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return cmp.Compare(a.at, b.at) })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = fmt.Sprintf("%8s  %s", FormatAt(l.at), l.text)
	}
	return out
}

// String is the schedule's heading and its lines, as csisim run prints it.
func (s Schedule) String() string {
	kinds := make([]string, len(s.Enabled))
	for i, k := range s.Enabled {
		kinds[i] = string(k)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nemesis seed %d: %d faults; kinds enabled: %s\n", s.Seed, len(s.Events), strings.Join(kinds, ", "))
	for _, l := range s.Lines() {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// Describe is fault.Describe with how often the fault strikes.
func Describe(f fault.Fault) string {
	d := f.Describe()
	if f.Times > 0 {
		d += fmt.Sprintf(" times %d", f.Times)
	}
	return d
}

// FormatAt writes a virtual time as "+12.3s".
func FormatAt(d time.Duration) string { return fmt.Sprintf("+%.1fs", d.Seconds()) }
