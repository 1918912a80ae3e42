package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"
)

// tickingSim is a simulated backend on a fake clock: RunUntil steps the
// clock a second at a time, calling act (a change to the cluster at a
// virtual time) and then cond after each step.
type tickingSim struct {
	fakeBackend
	clock *testingclock.FakeClock
	start time.Time
	act   func(elapsed time.Duration)
}

func (b *tickingSim) RunUntil(_ context.Context, timeout time.Duration, cond func() (bool, error)) error {
	if ok, _ := cond(); ok {
		return nil
	}
	for end := b.clock.Now().Add(timeout); b.clock.Now().Before(end); {
		b.clock.Step(time.Second)
		if b.act != nil {
			b.act(b.clock.Since(b.start))
		}
		if ok, _ := cond(); ok {
			return nil
		}
	}
	return context.DeadlineExceeded
}

func (b *tickingSim) RunFor(ctx context.Context, d time.Duration) error {
	_ = b.RunUntil(ctx, d, func() (bool, error) { return false, nil })
	return nil
}

const pendingClaim = `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        status: {phase: Pending}
`

func TestConsistently(t *testing.T) {
	tests := []struct {
		name    string
		changes time.Duration // when the claim's phase changes; 0 never
		wantErr string
	}{
		{name: "holds for the whole span"},
		{name: "broken partway", changes: 7 * time.Second, wantErr: "pvc/data to match status.phase=Pending held for 7s of 30s, then not; seen: status.phase: want Pending, got Bound"},
		{name: "broken after the span", changes: 45 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, pendingClaim+"  - consistently: {object: pvc/data, match: {status: {phase: Pending}}, for: 30s}\n")
			clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			cluster := newFakeCluster(clk)
			b := &tickingSim{clock: clk, start: clk.Now()}
			b.act = func(elapsed time.Duration) {
				if tt.changes > 0 && elapsed == tt.changes {
					obj, err := cluster.client.Resource(pvcsGVR).Namespace("default").Get(context.Background(), "data", metav1.GetOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					obj.Object["status"] = map[string]any{"phase": "Bound"}
					if _, err := cluster.client.Resource(pvcsGVR).Namespace("default").Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
						t.Error(err)
					}
				}
			}
			res, err := (&Runner{Backend: b, Clock: clk}).run(context.Background(), s, cluster.objects)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v\nwant %q", err, tt.wantErr)
			case tt.wantErr == "" && res.Steps[1].Detail != "pvc/data to match status.phase=Pending for 30s":
				t.Errorf("detail %q", res.Steps[1].Detail)
			}
		})
	}
}

func TestParseConsistently(t *testing.T) {
	tests := []struct{ step, wantErr string }{
		{"consistently: {object: pvc/data, jsonPath: '{.status.phase}', equals: Pending, for: 1m}", ""},
		{"consistently: {object: pvc/data, jsonPath: '{.status.phase}', equals: Pending}", "x.yaml:2: step 1 (consistently): consistently needs for:"},
		{"consistently: {object: pvc/data, for: 1m, timeout: 2m}", `unknown field "timeout"`},
		{"consistently: {object: pvc/data, for: 1m, save: {x: '{.a}'}}", "save applies to wait and assert, not to consistently"},
		{"consistently: {object: pvc/data, for: -1s}", "for must be positive"},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte("steps:\n  - "+tt.step+"\n"), t.TempDir())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: error %v", tt.step, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.step, err, tt.wantErr)
		}
	}
}

func TestFinallyRunsAfterAFailureAndReportsItsOwn(t *testing.T) {
	tests := []struct {
		name       string
		steps      string
		finally    string
		wantErr    string // in the run's error
		wantStep   int    // the step the error names
		wantDetail []Outcome
	}{
		{
			name:       "steps pass, finally passes",
			steps:      "  - assert: {object: pvc/data, match: {status: {phase: Pending}}}\n",
			finally:    "  - delete: {object: pvc/data}\n",
			wantDetail: []Outcome{Passed, Passed, Passed},
		},
		{
			name:       "a step fails, finally still runs",
			steps:      "  - assert: {object: pvc/data, match: {status: {phase: Bound}}}\n  - sleep: 1s\n",
			finally:    "  - delete: {object: pvc/data}\n",
			wantErr:    "status.phase: want Bound, got Pending",
			wantStep:   2,
			wantDetail: []Outcome{Passed, Failed, NotRun, Passed},
		},
		{
			name:       "finally fails after the steps passed",
			steps:      "  - sleep: 1s\n",
			finally:    "  - delete: {object: pvc/nope}\n  - delete: {object: pvc/data}\n",
			wantErr:    "cannot delete pvc/nope",
			wantStep:   3,
			wantDetail: []Outcome{Passed, Passed, Failed, Passed},
		},
		{
			name:       "both fail: the step's error names the finally failure",
			steps:      "  - assert: {object: pvc/data, match: {status: {phase: Bound}}}\n",
			finally:    "  - delete: {object: pvc/nope}\n",
			wantErr:    "meanwhile: finally: step 3",
			wantStep:   2,
			wantDetail: []Outcome{Passed, Failed, Failed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, pendingClaim+tt.steps+"finally:\n"+tt.finally)
			clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			cluster := newFakeCluster(clk)
			res, err := (&Runner{Backend: &tickingSim{clock: clk}, Clock: clk}).run(context.Background(), s, cluster.objects)
			var serr *StepError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			case tt.wantErr != "" && (!errors.As(err, &serr) || serr.Step != tt.wantStep):
				t.Fatalf("error %v, want it to name step %d", err, tt.wantStep)
			}
			var got []Outcome
			for _, st := range res.Steps {
				got = append(got, st.Outcome)
			}
			if strings.Join(outcomes(got), ",") != strings.Join(outcomes(tt.wantDetail), ",") {
				t.Errorf("outcomes %v, want %v", got, tt.wantDetail)
			}
		})
	}
}

func outcomes(os []Outcome) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = string(o)
	}
	return out
}

func TestRunOnAnotherBackendUsesANamespaceOfItsOwn(t *testing.T) {
	s := mustParse(t, "name: my_Scenario\n"+pendingClaim+"  - assert: {object: pvc/data, jsonPath: '{.metadata.namespace}', equals: '${namespace}'}\n")
	clk := testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	cluster := newFakeCluster(clk)
	res, err := (&Runner{Backend: fakeBackend{}, Clock: clk, PollInterval: time.Millisecond}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Namespace, "csisim-my-scenario-") || len(res.Namespace) != len("csisim-my-scenario-")+5 {
		t.Fatalf("namespace %q, want csisim-my-scenario-<5 characters>", res.Namespace)
	}
	if _, err := cluster.client.Resource(pvcsGVR).Namespace(res.Namespace).Get(context.Background(), "data", metav1.GetOptions{}); err != nil {
		t.Errorf("the claim is not in the run's namespace: %v", err)
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := cluster.client.Resource(nsGVR).Get(context.Background(), res.Namespace, metav1.GetOptions{}); err == nil {
		t.Errorf("namespace %s is left behind", res.Namespace)
	}
}

func TestGeneratedNamespaceIsAValidName(t *testing.T) {
	for _, name := range []string{"basic", "A_B.c", strings.Repeat("long-name", 10), "--x--"} {
		ns := generatedNamespace(name)
		if len(ns) > 63 || !strings.HasPrefix(ns, "csisim-") || strings.Contains(ns, "--") && !strings.Contains(name, "--") {
			t.Errorf("generatedNamespace(%q) = %q", name, ns)
		}
		for _, c := range ns {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				t.Errorf("generatedNamespace(%q) = %q has %q", name, ns, c)
			}
		}
	}
}
