package trace

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestStructuredDataIsNotPrinted(t *testing.T) {
	plain := Entry{Kind: CSI, Actor: "kubelet:node-1", Verb: "NodeStageVolume", Object: "v1", Detail: "OK"}
	with := plain
	with.Call = &CSICall{Node: "node-1", Volume: "v1", StagingPath: "/staging"}
	with.Write = &APIWrite{Kind: "Pod"}
	with.Check = &DataCheck{PodUID: "u"}
	if plain.Canonical() != with.Canonical() || plain.String() != with.String() {
		t.Errorf("structured data changed the line:\n%s\n%s", plain.Canonical(), with.Canonical())
	}
}

func TestNowAndCountUntil(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := New(clk)
	r.Add(Entry{Verb: "a"})
	clk.Step(time.Second)
	r.Add(Entry{Verb: "b"})
	r.Add(Entry{Verb: "c"})
	clk.Step(time.Second)
	if got := r.Now(); got != 2*time.Second {
		t.Errorf("Now = %s, want 2s", got)
	}
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{-time.Second, 0}, {0, 1}, {500 * time.Millisecond, 1}, {time.Second, 3}, {time.Hour, 3}} {
		if got := r.CountUntil(tt.at); got != tt.want {
			t.Errorf("CountUntil(%s) = %d, want %d", tt.at, got, tt.want)
		}
	}
}

// A call in flight is no entry: the timeline, its numbers and its
// subscribers are as without it, until it ends.
func TestBeginEnd(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := New(clk)
	var seen []string
	r.Subscribe(func(e Entry) { seen = append(seen, e.Verb) })
	r.Add(Entry{Verb: "a"})
	clk.Step(time.Second)
	stage := r.Begin(Entry{Kind: CSI, Verb: "NodeStageVolume", Detail: "in flight"})
	publish := r.Begin(Entry{Kind: CSI, Verb: "ControllerPublishVolume", Detail: "in flight"})
	if r.Len() != 1 || len(seen) != 1 {
		t.Errorf("Begin added an entry: %d entries, subscribers saw %q", r.Len(), seen)
	}
	clk.Step(time.Second)
	r.Add(Entry{Verb: "b"})
	entries, inFlight := r.Snapshot()
	if len(entries) != 2 || len(inFlight) != 2 || inFlight[0].Verb != "NodeStageVolume" || inFlight[1].Verb != "ControllerPublishVolume" ||
		inFlight[0].At != time.Second {
		t.Errorf("snapshot: %d entries, in flight %+v; want 2, and both calls in the order they began, at +1s", len(entries), inFlight)
	}
	clk.Step(time.Second)
	publish.End(Entry{Kind: CSI, Verb: "ControllerPublishVolume", Detail: "OK"})
	entries, inFlight = r.Snapshot()
	if len(entries) != 3 || entries[2].Seq != 3 || entries[2].At != 3*time.Second || len(inFlight) != 1 || inFlight[0].Verb != "NodeStageVolume" {
		t.Errorf("after End: entries %+v, in flight %+v", entries, inFlight)
	}
	stage.End(Entry{Kind: CSI, Verb: "NodeStageVolume", Detail: "OK"})
	if got := r.InFlight(); len(got) != 0 || r.Len() != 4 || len(seen) != 4 {
		t.Errorf("after both ended: in flight %+v, %d entries, subscribers saw %q", got, r.Len(), seen)
	}
}
