package nemesis

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/fault"
)

// needs is a failure that needs every one of want among the items.
func needs(want ...string) func([]string) bool {
	return func(items []string) bool {
		for _, w := range want {
			if !slices.Contains(items, w) {
				return false
			}
		}
		return true
	}
}

func TestMinimizeFindsExactlyTheFaultsTheFailureNeeds(t *testing.T) {
	tests := []struct {
		items, need []string
	}{
		{[]string{"a", "b", "c", "d", "e"}, []string{"a", "c"}},
		{[]string{"a", "b", "c", "d", "e"}, []string{"e"}},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h"}, []string{"b", "g", "h"}},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a"}, []string{"a"}},
	}
	for _, tt := range tests {
		calls := 0
		fails := func(items []string) bool { calls++; return needs(tt.need...)(items) }
		got := Minimize(tt.items, fails)
		if !slices.Equal(got, tt.need) {
			t.Errorf("Minimize(%v) needing %v = %v", tt.items, tt.need, got)
		}
		if max := len(tt.items) * len(tt.items); calls > max {
			t.Errorf("Minimize(%v) needing %v: %d trials, more than %d", tt.items, tt.need, calls, max)
		}
	}
}

func TestMinimizeKeepsTheOrder(t *testing.T) {
	got := Minimize([]string{"e", "d", "c", "b", "a"}, needs("a", "c", "e"))
	if want := []string{"e", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("Minimize = %v, want %v", got, want)
	}
}

// An order-sensitive failure: it needs b after a, with nothing in between
// that starts with x.
func TestMinimizeIsOneMinimalOnAnyPredicate(t *testing.T) {
	fails := func(items []string) bool {
		s := strings.Join(items, "")
		return strings.Contains(s, "a") && strings.Contains(s, "b") && strings.Index(s, "a") < strings.Index(s, "b")
	}
	items := []string{"b", "x", "a", "y", "b", "z"}
	got := Minimize(items, fails)
	if !fails(got) {
		t.Fatalf("Minimize = %v, which does not fail", got)
	}
	for i := range got {
		if fails(slices.Delete(slices.Clone(got), i, i+1)) {
			t.Errorf("Minimize = %v: it still fails without %q", got, got[i])
		}
	}
}

func TestShiftEarlierMovesFaultsAsEarlyAsTheFailureAllows(t *testing.T) {
	loss := Event{At: 80 * time.Second, Fault: fault.Fault{Kind: fault.NodeLoss, Node: "n"},
		Recovery: &fault.Fault{Kind: fault.NodeReturn, Node: "n"}, RecoverAfter: time.Minute}
	restart := Event{At: 40 * time.Second, Fault: fault.Fault{Kind: fault.KubeletRestart, Node: "m"}}
	// The failure needs the loss at 15s or later; the restart anywhere.
	fails := func(evs []Event) bool {
		for _, ev := range evs {
			if ev.Fault.Kind == fault.NodeLoss {
				return ev.At >= 15*time.Second
			}
		}
		return false
	}
	got := ShiftEarlier([]Event{loss, restart}, fails)
	if len(got) != 2 {
		t.Fatalf("ShiftEarlier = %+v", got)
	}
	// 80s halves to 40s and 20s; 10s would not fail. The restart halves
	// three times: 40s, 20s, 10s, 5s.
	if got[0].Fault.Kind != fault.KubeletRestart || got[0].At != 5*time.Second {
		t.Errorf("first event %s at %s, want kubelet-restart at 5s", got[0].Fault.Kind, got[0].At)
	}
	if got[1].Fault.Kind != fault.NodeLoss || got[1].At != 20*time.Second || got[1].RecoverAfter != time.Minute {
		t.Errorf("second event %s at %s recovering after %s, want node-loss at 20s recovering after 1m", got[1].Fault.Kind, got[1].At, got[1].RecoverAfter)
	}
}
