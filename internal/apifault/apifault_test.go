package apifault

import (
	"testing"
	"time"
)

func TestThrottleCountsEachActorsRequests(t *testing.T) {
	var s State
	s.Throttle("csi-provisioner", 2, 3500*time.Millisecond)
	s.Throttle("", -1, 0)

	steps := []struct {
		actor      string
		retryAfter int
		refused    bool
		pending    int // of the actor after the request
	}{
		{"csi-provisioner", 3, true, 1},
		{"csi-provisioner", 3, true, 0},
		// Its own throttle has ended: the one for every actor now applies.
		{"csi-provisioner", 1, true, 0},
		{"kube-scheduler", 1, true, 0},
	}
	for i, st := range steps {
		retryAfter, refused := s.TakeThrottled(st.actor)
		if retryAfter != st.retryAfter || refused != st.refused {
			t.Fatalf("request %d of %s: got (%d, %v), want (%d, %v)", i, st.actor, retryAfter, refused, st.retryAfter, st.refused)
		}
		if got := s.PendingThrottled(st.actor); got != st.pending {
			t.Fatalf("after request %d of %s: %d pending, want %d", i, st.actor, got, st.pending)
		}
	}
	if got := s.PendingThrottled(""); got != -1 {
		t.Fatalf("the throttle of every actor: %d pending, want -1 (until ended)", got)
	}
	s.Throttle("", 0, 0)
	if _, refused := s.TakeThrottled("kube-scheduler"); refused {
		t.Fatal("a request was refused after every throttle ended")
	}
}

func TestWriteLatencyPrefersTheActorsOwn(t *testing.T) {
	var s State
	s.SlowWrites("", time.Second)
	s.SlowWrites("kube-controller-manager", 5*time.Second)
	for _, tc := range []struct {
		actor string
		want  time.Duration
	}{
		{"kube-controller-manager", 5 * time.Second},
		{"csi-attacher", time.Second},
	} {
		if got := s.WriteLatency(tc.actor); got != tc.want {
			t.Errorf("WriteLatency(%q) = %v, want %v", tc.actor, got, tc.want)
		}
	}
	s.SlowWrites("", 0)
	if got := s.WriteLatency("csi-attacher"); got != 0 {
		t.Errorf("after SlowWrites(\"\", 0): WriteLatency = %v, want 0", got)
	}
}

func TestSetDownReportsWhatItWas(t *testing.T) {
	var s State
	if was := s.SetDown(true); was || !s.Down() {
		t.Fatalf("first SetDown(true): was %v, Down %v", was, s.Down())
	}
	if was := s.SetDown(false); !was || s.Down() {
		t.Fatalf("SetDown(false): was %v, Down %v", was, s.Down())
	}
}
