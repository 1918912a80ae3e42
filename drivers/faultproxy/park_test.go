package faultproxy

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/csisim/csisim/drivers/mock"
)

// fakePark records what the proxy parks for; each wait passes at once
// unless block is set, when it waits for its interrupt.
type fakePark struct {
	block bool
	mu    sync.Mutex
	asked []time.Duration
}

func (f *fakePark) park(d time.Duration) (func() bool, func()) {
	f.mu.Lock()
	f.asked = append(f.asked, d)
	f.mu.Unlock()
	interrupted := make(chan struct{})
	var once sync.Once
	wait := func() bool {
		if !f.block {
			return true
		}
		<-interrupted
		return false
	}
	return wait, func() { once.Do(func() { close(interrupted) }) }
}

func withTimeout(ctx context.Context, d time.Duration) context.Context {
	return metadata.AppendToOutgoingContext(ctx, TimeoutHeader, d.String())
}

func TestVirtualCallersWaitOnTheirClock(t *testing.T) {
	for _, tc := range []struct {
		name      string
		action    Action // on CreateVolume
		timeout   time.Duration
		wantPark  time.Duration
		wantCode  codes.Code
		wantMsg   string
		forwarded bool
	}{
		{"a delay shorter than the timeout", Action{Kind: ActionDelay, Delay: 10 * time.Second}, 15 * time.Second, 10 * time.Second, codes.OK, "", true},
		{"a delay longer than the timeout", Action{Kind: ActionDelay, Delay: 20 * time.Second}, 15 * time.Second, 15 * time.Second, codes.DeadlineExceeded, "context deadline exceeded", false},
		{"a hang", Action{Kind: ActionHang}, 2 * time.Minute, 2 * time.Minute, codes.DeadlineExceeded, "context deadline exceeded", false},
		{"a hang with a limit", Action{Kind: ActionHang, Delay: 30 * time.Second}, 2 * time.Minute, 30 * time.Second, codes.DeadlineExceeded, "hung the call for 30s", false},
		{"a hang with a limit past the timeout", Action{Kind: ActionHang, Delay: 5 * time.Minute}, 15 * time.Second, 15 * time.Second, codes.DeadlineExceeded, "context deadline exceeded", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := &fakePark{}
			e := newEnv(t, Config{Rules: []Rule{{Method: "CreateVolume", Action: tc.action}}, Park: fp.park}, mock.Config{})
			start := time.Now()
			_, err := e.ctrl.CreateVolume(withTimeout(ctxT(t), tc.timeout), &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{rwo}})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the call took %s of wall time", took)
			}
			if got := status.Code(err); got != tc.wantCode || !strings.Contains(status.Convert(err).Message(), tc.wantMsg) {
				t.Fatalf("got %v, want %v with %q", err, tc.wantCode, tc.wantMsg)
			}
			if len(fp.asked) != 1 || fp.asked[0] != tc.wantPark {
				t.Errorf("parked for %v, want [%s]", fp.asked, tc.wantPark)
			}
			h := waitCalls(t, e, 1)
			if h[0].Forwarded != tc.forwarded {
				t.Errorf("forwarded = %v, want %v", h[0].Forwarded, tc.forwarded)
			}
		})
	}
}

func TestCallersWithoutTimeoutHeaderWaitInWallTime(t *testing.T) {
	fp := &fakePark{}
	rule := Rule{Method: "Probe", Action: Action{Kind: ActionDelay, Delay: 20 * time.Millisecond}}
	e := newEnv(t, Config{Rules: []Rule{rule}, Park: fp.park}, mock.Config{})
	start := time.Now()
	if _, err := e.id.Probe(ctxT(t), &csi.ProbeRequest{}); err != nil {
		t.Fatal(err)
	}
	if len(fp.asked) != 0 {
		t.Errorf("a wall-time caller was parked: %v", fp.asked)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("the delay took %s, want at least 20ms", took)
	}
}

func TestStopInterruptsParkedCalls(t *testing.T) {
	fp := &fakePark{block: true}
	rule := Rule{Method: "Probe", Action: Action{Kind: ActionHang}}
	e := newEnv(t, Config{Rules: []Rule{rule}, Park: fp.park}, mock.Config{})
	errc := make(chan error, 1)
	go func() { errc <- errOf(e.id.Probe(withTimeout(context.Background(), time.Hour), &csi.ProbeRequest{})) }()
	waitRule(t, e.proxy, 1)
	if err := e.proxy.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("parked caller got %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked call did not end with the proxy")
	}
}
