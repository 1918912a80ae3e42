package scenarios

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fault"
)

// virtualInjector is a simulated backend on a fake clock that injects
// faults, noting when.
type virtualInjector struct {
	fakeInjector
	clock *testingclock.FakeClock
	start time.Time
	at    []time.Duration // when each fault was injected, since start
	fail  fault.Kind      // InjectFault fails for this kind
}

func (b *virtualInjector) RunUntil(_ context.Context, timeout time.Duration, _ func() (bool, error)) error {
	b.clock.Step(timeout)
	return context.DeadlineExceeded
}

func (b *virtualInjector) RunFor(_ context.Context, d time.Duration) error {
	b.clock.Step(d)
	return nil
}

func (b *virtualInjector) InjectFault(ctx context.Context, f fault.Fault) error {
	if f.Kind == b.fail {
		return errors.New("refused")
	}
	b.at = append(b.at, b.clock.Since(b.start))
	return b.fakeInjector.InjectFault(ctx, f)
}

func TestTimedFaultsFireAtTheirVirtualTimes(t *testing.T) {
	s := mustParse(t, `steps:
  - sleep: 10s
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - sleep: 5s
`)
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC))
	b := &virtualInjector{fakeInjector: fakeInjector{can: []fault.Kind{fault.NodeLoss, fault.NodeReturn, fault.KubeletRestart}}, clock: clk, start: clk.Now()}
	timed := []TimedFault{
		{At: 12 * time.Second, Fault: fault.Fault{Kind: fault.NodeReturn, Node: "node-1"}},
		{At: 3 * time.Second, Fault: fault.Fault{Kind: fault.NodeLoss, Node: "node-1"}},
		{At: 10 * time.Second, Fault: fault.Fault{Kind: fault.KubeletRestart, Node: "node-2"}},
		{At: time.Minute, Fault: fault.Fault{Kind: fault.NodeLoss, Node: "node-2"}}, // after the end
	}
	cluster := newFakeCluster(clk)
	res, err := (&Runner{Backend: b, Clock: clk, Timed: timed}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	wantAt := []time.Duration{3 * time.Second, 10 * time.Second, 12 * time.Second}
	if len(b.at) != len(wantAt) {
		t.Fatalf("faults injected at %v, want at %v", b.at, wantAt)
	}
	for i := range wantAt {
		if b.at[i] != wantAt[i] {
			t.Errorf("fault %d injected at %s, want %s", i, b.at[i], wantAt[i])
		}
	}
	// The kubelet restart fell due as the first sleep ended: it fires
	// during that sleep, at its very end.
	want := []FiredFault{
		{TimedFault: timed[1], Step: 1, Offset: 3 * time.Second},
		{TimedFault: timed[2], Step: 1, Offset: 10 * time.Second},
		{TimedFault: timed[0], Step: 3, Offset: 2 * time.Second},
	}
	if len(res.Fired) != len(want) {
		t.Fatalf("fired %+v, want %+v", res.Fired, want)
	}
	for i := range want {
		if res.Fired[i] != want[i] {
			t.Errorf("fired[%d] = %+v, want %+v", i, res.Fired[i], want[i])
		}
	}
	if got := clk.Since(b.start); got != 15*time.Second {
		t.Errorf("the run took %s of virtual time, want 15s: timed faults must not change how long steps run", got)
	}
}

func TestTimedFaultThatFailsFailsTheStep(t *testing.T) {
	s := mustParse(t, "steps:\n  - sleep: 10s\n")
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC))
	b := &virtualInjector{fakeInjector: fakeInjector{can: []fault.Kind{fault.NodeReturn}}, clock: clk, start: clk.Now(), fail: fault.NodeReturn}
	timed := []TimedFault{{At: 4 * time.Second, Fault: fault.Fault{Kind: fault.NodeReturn, Node: "node-1"}}}
	_, err := (&Runner{Backend: b, Clock: clk, Timed: timed}).run(context.Background(), s, newFakeCluster(clk).objects)
	var terr *TimedFaultError
	var serr *StepError
	if !errors.As(err, &terr) || !errors.As(err, &serr) || serr.Step != 1 {
		t.Fatalf("error %v, want a *StepError of step 1 wrapping a *TimedFaultError", err)
	}
}

func TestTimedFaultsAreRefusedUpFront(t *testing.T) {
	s := mustParse(t, "steps:\n  - sleep: 10s\n")
	clk := testingclock.NewFakeClock(time.Now())
	timed := []TimedFault{{At: time.Second, Fault: fault.Fault{Kind: fault.CSIHang, CSI: fault.CSI{Method: "CreateVolume"}}}}
	for name, b := range map[string]Backend{
		"not simulated": &fakeInjector{can: []fault.Kind{fault.CSIHang}},
		"cannot inject": &virtualInjector{fakeInjector: fakeInjector{can: []fault.Kind{fault.NodeLoss}}, clock: clk},
	} {
		_, err := (&Runner{Backend: b, Clock: clk, Timed: timed}).run(context.Background(), s, newFakeCluster(clk).objects)
		if err == nil {
			t.Errorf("%s: the run started", name)
		}
	}
}

// A timed fault that lasts past the last step (an API server slowed for a
// minute, fired 5s before the end) is outlasted before the run cleans up
// and judges the end state; one that acts at once adds nothing.
func TestTimedFaultStillActingIsOutlasted(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    fault.Fault
		want time.Duration // the run's virtual time, steps included
	}{
		{"slow writes", fault.Fault{Kind: fault.APISlowWrites, API: fault.API{Duration: time.Minute, Latency: 2 * time.Second}}, 5*time.Second + time.Minute + 2*time.Second},
		{"api server down", fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}}, 5*time.Second + 30*time.Second},
		{"a fault that acts at once", fault.Fault{Kind: fault.KubeletRestart, Node: "node-1"}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, "steps:\n  - sleep: 10s\n")
			clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC))
			b := &virtualInjector{fakeInjector: fakeInjector{can: []fault.Kind{tc.f.Kind}}, clock: clk, start: clk.Now()}
			timed := []TimedFault{{At: 5 * time.Second, Fault: tc.f}}
			if _, err := (&Runner{Backend: b, Clock: clk, Timed: timed}).run(context.Background(), s, newFakeCluster(clk).objects); err != nil {
				t.Fatal(err)
			}
			if got := clk.Since(b.start); got != tc.want {
				t.Errorf("the run took %s of virtual time, want %s", got, tc.want)
			}
		})
	}
}
