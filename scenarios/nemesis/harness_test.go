package nemesis_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/scenarios/nemesis"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// stagedOnce is a planted bug detector: it holds a node plugin to the
// belief that the kubelet stages a volume on a node once until it unstages
// it. A real kubelet that restarts stages again the volumes it finds
// mounted (it cannot know the earlier NodeStageVolume finished), so only a
// kubelet-restart while a volume is staged breaks it.
var stagedOnce = invariant.Invariant{
	Name: "staged-once",
	Doc:  "NodeStageVolume succeeds on a node at most once until NodeUnstageVolume.",
	Check: func(h *invariant.History) []invariant.Violation {
		staged := map[string]bool{}
		var out []invariant.Violation
		for _, e := range h.Entries {
			if e.Kind != trace.CSI || e.Call == nil || e.Err != "" {
				continue
			}
			key := e.Call.Node + "|" + e.Call.Volume
			switch e.Verb {
			case "NodeStageVolume":
				if staged[key] {
					out = append(out, invariant.Violation{Message: fmt.Sprintf("%s staged again on %s (#%d)", e.Call.Volume, e.Call.Node, e.Seq), Entries: []int{e.Seq}})
				}
				staged[key] = true
			case "NodeUnstageVolume":
				delete(staged, key)
			}
		}
		return out
	},
}

func mockHarness(t *testing.T, sc *scenarios.Scenario, seed uint64) *nemesis.Harness {
	return &nemesis.Harness{Scenario: sc, Checks: []invariant.Invariant{stagedOnce},
		Start: func(ctx context.Context, _ bool) (nemesis.Cluster, error) {
			return cluster.Start(ctx, cluster.Config{Nodes: sc.Cluster.Nodes, Seed: seed, Mock: true})
		}}
}

// The nemesis finds the planted bug with some seed, and the shrinker
// reduces that seed's schedule to the one fault responsible; the scenario
// it writes fails the same way without the nemesis.
func TestNemesisFindsAndShrinksAPlantedBug(t *testing.T) {
	ctx := context.Background()
	sc, err := scenarios.Load("testdata/long-running-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 60; seed++ {
		h := mockHarness(t, sc, seed)
		targets, baseline, err := h.Survey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if baseline.Verdict.Class != nemesis.Pass {
			t.Fatalf("without faults: %s\n%s", baseline.Verdict.Signature(), baseline.Verdict.Message)
		}
		sched := nemesis.Generate(seed, targets)
		r, err := h.Run(ctx, sched, true)
		if err != nil {
			t.Fatal(err)
		}
		// A schedule with other faults besides, so that there is
		// something to shrink.
		if !h.Failed(r) || len(sched.Events) < 2 {
			continue
		}
		if got, want := r.Verdict.Signature(), "safety: staged-once"; got != want {
			t.Fatalf("seed %d fails with %s, want %s:\n%s\n%s", seed, got, want, r.Verdict.Message, sched)
		}
		small, trials, err := h.Shrink(ctx, sched, r.Verdict)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: %d faults shrunk to %d in %d trials:\n%s", seed, len(sched.Events), len(small.Events), trials, small)
		if len(small.Events) != 1 || small.Events[0].Fault.Kind != fault.KubeletRestart {
			t.Fatalf("shrunk to\n%s\nwant the one kubelet-restart of\n%s", small, sched)
		}
		checkReproducer(t, h, sc, small, r.Verdict)
		return
	}
	t.Fatal("no seed of 1..60 found the planted bug")
}

// checkReproducer writes the shrunk schedule as a scenario with fault
// steps and runs it without the nemesis.
func checkReproducer(t *testing.T, h *nemesis.Harness, sc *scenarios.Scenario, small nemesis.Schedule, want nemesis.Verdict) {
	t.Helper()
	ctx := context.Background()
	final, err := h.Run(ctx, small, true)
	if err != nil {
		t.Fatal(err)
	}
	source, err := os.ReadFile(sc.File)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text, err := nemesis.Reproducer(nemesis.ReproducerInput{Source: source, Scenario: sc, Fired: final.Result.Fired,
		FromDir: filepath.Dir(sc.File), ToDir: dir, Name: "shrunk", Comment: "# shrunk"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte("kubeletRestart: {node: node-")) {
		t.Errorf("the reproducer has no kubelet-restart step:\n%s", text)
	}
	repro, err := scenarios.Parse(filepath.Join(dir, "shrunk.yaml"), text, dir)
	if err != nil {
		t.Fatalf("the reproducer does not load: %v\n%s", err, text)
	}
	check, err := h.RunScenario(ctx, repro)
	if err != nil {
		t.Fatal(err)
	}
	if check.Verdict.Signature() != want.Signature() {
		t.Errorf("the reproducer ends with %s, want %s:\n%s", check.Verdict.Signature(), want.Signature(), text)
	}
}

// runRoot matches a run's directory's name.
var runRoot = regexp.MustCompile(`csisim-run-[0-9]+`)

// Same seed, same schedule, same timeline.
func TestNemesisRunsAreDeterministic(t *testing.T) {
	ctx := context.Background()
	sc, err := scenarios.Load("../library/multi-node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var traces [2]string
	for i := range traces {
		h := mockHarness(t, sc, 7)
		targets, _, err := h.Survey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.Run(ctx, nemesis.Generate(7, targets), true)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, e := range r.Entries {
			b.WriteString(e.Canonical() + "\n")
		}
		// The run's directory is made afresh (os.MkdirTemp) and shows in a
		// dial error's socket path; the timelines write it as a word.
		traces[i] = runRoot.ReplaceAllString(b.String(), "csisim-run-ROOT")
	}
	if traces[0] != traces[1] {
		t.Error("two runs of seed 7 wrote different timelines")
	}
}
