package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/scenarios/nemesis"
)

// A --shrink run is a child trial; the parent's seed line takes the run's
// cluster time from the verdict file the child writes, as it takes the
// verdict and the faults that fired.
func TestTrialVerdictFileCarriesClusterTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "verdict.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	fired := scenarios.FiredFault{Step: 2, Offset: 3 * time.Second}
	verdict := nemesis.Verdict{Class: nemesis.Safety, Message: "m"}
	for _, l := range []trialLine{{Fired: &fired}, {Verdict: &verdict, ClusterTime: 46 * time.Second}} {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, found, err := readTrial(path)
	if err != nil || !found {
		t.Fatalf("readTrial: found %v, err %v", found, err)
	}
	if got.ClusterTime != 46*time.Second || len(got.Fired) != 1 || got.Verdict.Class != nemesis.Safety {
		t.Errorf("readTrial = %+v, want the verdict, one fired fault and 46s of cluster time", got)
	}
}
