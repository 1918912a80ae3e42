package scenarios

import (
	"context"
	"errors"
	"strings"
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

// relistingInjector is a virtualInjector whose components' informers are
// blind (their watch ended, the list not made) until listedAt; its
// RunUntil runs second by second, as a loop's would reach the list.
type relistingInjector struct {
	virtualInjector
	listedAt time.Time // zero: never
}

func (b *relistingInjector) Relisting() []string {
	if !b.listedAt.IsZero() && !b.clock.Now().Before(b.listedAt) {
		return nil
	}
	return []string{"attachdetach-controller pods"}
}

func (b *relistingInjector) RunUntil(_ context.Context, timeout time.Duration, cond func() (bool, error)) error {
	for end := b.clock.Now().Add(timeout); b.clock.Now().Before(end); b.clock.Step(time.Second) {
		if done, err := cond(); done || err != nil {
			return err
		}
	}
	return context.DeadlineExceeded
}

// After the last step the run also waits for the informers a timed fault
// left blind to list again (a reflector backs off up to a minute past the
// outage), so the end is not judged while a controller still acts on a
// stale cache; no wait when no timed fault fired, and a list that never
// comes fails the run by name.
func TestBrokenWatchesAreListedBeforeTheEnd(t *testing.T) {
	outage := fault.Fault{Kind: fault.APIServerDown, API: fault.API{Duration: 30 * time.Second}}
	for _, tc := range []struct {
		name     string
		at       time.Duration // when the timed fault is due
		listedAt time.Duration // when the informers have listed again (0: never)
		want     time.Duration // the run's virtual time
		wantErr  string
	}{
		{"listed 40 s after the outage", 5 * time.Second, 75 * time.Second, 75 * time.Second, ""},
		{"listed before the last step", 1 * time.Second, 9 * time.Second, 31 * time.Second, ""},
		{"no timed fault fired", 20 * time.Second, 0, 10 * time.Second, ""},
		{"never listed", 5 * time.Second, 0, 35*time.Second + relistBound, "have still not listed again: attachdetach-controller pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, "steps:\n  - sleep: 10s\n")
			clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC))
			b := &relistingInjector{virtualInjector: virtualInjector{fakeInjector: fakeInjector{can: []fault.Kind{outage.Kind}}, clock: clk, start: clk.Now()}}
			if tc.listedAt > 0 {
				b.listedAt = clk.Now().Add(tc.listedAt)
			}
			timed := []TimedFault{{At: tc.at, Fault: outage}}
			_, err := (&Runner{Backend: b, Clock: clk, Timed: timed}).run(context.Background(), s, newFakeCluster(clk).objects)
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			if got := clk.Since(b.start); got != tc.want {
				t.Errorf("the run took %s of virtual time, want %s", got, tc.want)
			}
		})
	}
}

func TestDescribeBlind(t *testing.T) {
	few := []string{"a pods", "b nodes"}
	if got := describeBlind(few); got != "a pods, b nodes" {
		t.Errorf("describeBlind(%v) = %q", few, got)
	}
	many := []string{"a nodes", "a pods", "b leases", "b pods"}
	if got, want := describeBlind(many), "4 informers (of a, b)"; got != want {
		t.Errorf("describeBlind(%v) = %q, want %q", many, got, want)
	}
}
