package diff

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/testenv"
	"github.com/csisim/csisim/scenarios"
)

// TestMain removes the csisim binary built for the driver plugins.
func TestMain(m *testing.M) { testenv.Main(m) }

// The judge runs the simulator as `csisim run` does: scenarios whose
// timing is what they are about, which settling after each step broke,
// pass every step, and the state at each step's end is what the step left
// (a count the scenario waited for is that count, not one a wait for quiet
// let grow).
func TestSimulatorRunsScenariosAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs library scenarios on the simulator")
	}
	tests := []struct {
		file string
		// step, if set, is a step whose snapshot must show the pod's
		// FailedMount event counted count times.
		step  int
		count int32
	}{
		{file: "kubelet-claim-not-found.yaml", step: 10, count: 2},
		{file: "kubelet-missing-driver.yaml", step: 7, count: 8},
		{file: "kubelet-concurrent-unstage.yaml"},
		{file: "api-conflict-pv-binder.yaml"},
		{file: "api-conflict-provisioner.yaml"},
		// Its finally steps run, and count, as the steps do.
		{file: "wait-for-first-consumer.yaml"},
		// Its cluster runs the external-health-monitor (cluster.healthMonitor),
		// which the simulator is started with as csisim run starts it.
		{file: "volume-health-abnormal.yaml"},
	}
	bin := testenv.CsisimBinary(t)
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			sc, err := scenarios.Load("../scenarios/library/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run, err := runSim(ctx, sc, Options{Seed: 1, DriverBinary: bin})
			if err != nil {
				t.Fatal(err)
			}
			if !run.Passed || run.Steps != run.Total || len(run.Snapshots) != run.Total {
				t.Fatalf("passed %t, %d of %d steps, %d snapshots: %s", run.Passed, run.Steps, run.Total, len(run.Snapshots), run.Error)
			}
			if len(run.History) == 0 {
				t.Error("no history")
			}
			if tc.step == 0 {
				return
			}
			s := run.Snapshots[tc.step-1]
			if got := s.Objects["Pod default/app"].Events["FailedMount"].Count; got != tc.count {
				t.Errorf("after step %d (%s): FailedMount counted %d times, want %d", s.Step, s.StepName, got, tc.count)
			}
			if !strings.HasPrefix(s.StepName, "wait") && !strings.HasPrefix(s.StepName, "assert") {
				t.Errorf("step %d is %q: the scenario changed, and this test with it", s.Step, s.StepName)
			}
		})
	}
}

// The real side (a scenario on a real control plane, read back at each
// step's end) is judged in cmd/csisim's csisim diff spec, which runs
// kubelet-claim-not-found on both: one real control plane for both tests.

// Looking at the simulator at the end of each step changes nothing it
// does: its timeline is the one a plain run of the scenario with the same
// seed writes, byte for byte.
func TestJudgeDoesNotPerturbTheSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs library scenarios on the simulator")
	}
	bin := testenv.CsisimBinary(t)
	for _, file := range []string{"kubelet-claim-not-found.yaml", "kubelet-concurrent-unstage.yaml", "api-conflict-pv-binder.yaml"} {
		t.Run(file, func(t *testing.T) {
			sc, err := scenarios.Load("../scenarios/library/" + file)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			timeline := func(judged bool) string {
				c, err := startSim(ctx, sc, Options{Seed: 1, DriverBinary: bin})
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := c.Close(); err != nil {
						t.Error(err)
					}
				}()
				if judged {
					run, err := simSide(c).run(ctx, sc, Options{})
					if err != nil || !run.Passed {
						t.Fatalf("judged run: passed %t, %v %s", run.Passed, err, run.Error)
					}
				} else {
					runner := &scenarios.Runner{Backend: c, Recorder: c.Recorder(), Clock: c.Clock(), Namespace: "default"}
					if _, err := runner.Run(ctx, sc); err != nil {
						t.Fatalf("plain run: %v", err)
					}
				}
				var b strings.Builder
				for _, e := range c.Recorder().Entries() {
					b.WriteString(e.Canonical() + "\n")
				}
				return b.String()
			}
			plain, judged := timeline(false), timeline(true)
			if plain != judged {
				t.Errorf("the judged run's timeline differs from the plain run's:\n--- plain\n%s\n--- judged\n%s", plain, judged)
			}
		})
	}
}
