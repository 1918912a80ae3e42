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
