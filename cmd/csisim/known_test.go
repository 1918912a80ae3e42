package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// A run whose only violations a known Kubernetes bug caused is
// known-upstream: not failed (exit 0, no JUnit failure), and printed on the
// run, the sweep's line for its seed, its summary and the JUnit report. A
// run with another violation beside it fails, still naming the known one.
func TestKnownUpstreamRuns(t *testing.T) {
	known := invariant.Violation{Invariant: "csi-call-order", Message: "DeleteVolumeWhileInUse: call #1 ...", Entries: []int{1}, KnownUpstream: "kubernetes#121937"}
	ordinary := invariant.Violation{Invariant: "rwo-single-node", Message: "two nodes", Entries: []int{1}}
	entries := []trace.Entry{{Seq: 1, Kind: trace.CSI, Actor: "external-provisioner", Verb: "DeleteVolume", Object: "v1"}}
	steps := []scenarios.StepResult{{Step: 1, Outcome: scenarios.Passed}}
	onlyKnown := runOutcome{seed: 63, entries: entries, result: &scenarios.Result{Steps: steps,
		Invariants: &scenarios.InvariantResult{Checked: 10, Violations: []invariant.Violation{known}, KnownUpstream: []invariant.Violation{known}}}}
	mixedResult := &scenarios.InvariantResult{Checked: 10, Violations: []invariant.Violation{known, ordinary},
		Unexpected: []invariant.Violation{ordinary}, KnownUpstream: []invariant.Violation{known}}
	mixed := runOutcome{seed: 64, entries: entries, result: &scenarios.Result{Steps: steps, Invariants: mixedResult},
		runErr: &scenarios.InvariantError{Result: mixedResult, Entries: entries}}
	knownLine := "KNOWN  kubernetes#121937: INVARIANT csi-call-order violated: DeleteVolumeWhileInUse: call #1 ..."
	tests := []struct {
		name       string
		out        runOutcome
		code       int
		known      bool
		stdout     []string
		stderr     []string
		junitFails bool
	}{
		{"only known-upstream", onlyKnown, 0, true,
			[]string{"KNOWN UPSTREAM: 1 steps", "; 9 invariants held, 1 violated by a known Kubernetes bug (kubernetes#121937: csi-call-order) — not a failure", knownLine + "\n    #1 "},
			nil, false},
		{"known-upstream and an ordinary violation", mixed, 1, false, nil,
			[]string{"INVARIANT rwo-single-node violated: two nodes", knownLine + "\n    #1 ", "FAILED: 1 steps passed, but the run breaks its invariants"}, true},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := reportRun(tt.out, &stdout, &stderr); code != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.name, code, tt.code)
		}
		for _, want := range tt.stdout {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s: stdout lacks %q:\n%s", tt.name, want, stdout.String())
			}
		}
		for _, want := range tt.stderr {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%s: stderr lacks %q:\n%s", tt.name, want, stderr.String())
			}
		}
		r := tt.out.seedResult()
		if r.known() != tt.known || len(r.KnownUpstream) != 1 || r.KnownUpstream[0] != knownLine {
			t.Errorf("%s: seed result known=%v with %q, want known=%v with %q", tt.name, r.known(), r.KnownUpstream, tt.known, knownLine)
		}
		tc := junitCase("s", r, func(uint64) string { return "csisim run s.yaml" })
		if (tc.Failure != nil) != tt.junitFails || tc.Properties == nil || len(tc.Properties.Property) != 1 ||
			tc.Properties.Property[0] != (junitProperty{Name: "known-upstream", Value: "kubernetes#121937"}) ||
			tc.SystemOut == nil || !strings.HasPrefix(tc.SystemOut.Text, knownLine+"\n") {
			t.Errorf("%s: JUnit case %+v, want failure=%v, the known-upstream property and the KNOWN line in system-out", tt.name, tc, tt.junitFails)
		}
	}
}

// A sweep counts known-upstream seeds apart: not failed, not passed.
func TestSweepCountsKnownUpstreamApart(t *testing.T) {
	knownLine := "KNOWN  kubernetes#121937: INVARIANT csi-call-order violated: ..."
	pass := seedResult{Seed: 1, Steps: "nemesis"}
	known := seedResult{Seed: 2, Steps: "nemesis", KnownUpstream: []string{knownLine}}
	fail := seedResult{Seed: 3, Steps: "nemesis", Failure: &failure{Kind: "failure", Summary: "safety: rwo-single-node"}}
	tests := []struct {
		name     string
		outcomes []seedResult
		want     []string
	}{
		{"passed and known-upstream", []seedResult{pass, known},
			[]string{"seed 2  KNOWN  nemesis", "    " + knownLine + "\n    replay: csisim run --seed 2 s.yaml\n",
				"KNOWN UPSTREAM: 2 seeds: 1 passed, 0 failed, 1 known-upstream (seed 2: kubernetes#121937; not failures)"}},
		{"passed, known-upstream and failed", []seedResult{pass, known, fail},
			[]string{"seed 3  FAIL", "FAILED: 1 of 3 seeds (seed 3); 1 known-upstream (seed 2: kubernetes#121937), not failures"}},
		{"passed", []seedResult{pass}, []string{"seed 1  PASS", "PASSED: 1 seed, in"}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		sw := sweep{seeds: []uint64{1, 2, 3}, replay: func(seed uint64) string { return replayCommand(nil, "s.yaml")(seed) }}
		p := newSeedPrinter(sw, &out)
		for _, r := range tt.outcomes {
			p.print(r)
		}
		p.summary(tt.outcomes, time.Second, false)
		for _, want := range tt.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", tt.name, want, out.String())
			}
		}
		if code := len(failedSeeds(tt.outcomes)); (code > 0) != (tt.name == "passed, known-upstream and failed") {
			t.Errorf("%s: %d failed seeds", tt.name, code)
		}
	}
}

// csisim test counts a known-upstream scenario apart and prints its KNOWN
// lines; it fails nothing.
func TestDriverTestCountsKnownUpstreamApart(t *testing.T) {
	knownLine := "KNOWN  kubernetes#121937: INVARIANT csi-call-order violated: ..."
	results := []scenarioResult{
		{name: "basic-lifecycle", seedResult: seedResult{Steps: "13 steps"}},
		{name: "expansion-block", seedResult: seedResult{Steps: "16 steps", KnownUpstream: []string{knownLine}}},
	}
	var out bytes.Buffer
	for _, r := range results {
		printScenario(&out, r)
	}
	if failed := printTotals(&out, nil, results, time.Second); failed {
		t.Errorf("a known-upstream scenario failed the test:\n%s", out.String())
	}
	for _, want := range []string{"  KNOWN expansion-block", "        " + knownLine + "\n",
		"scenarios: 1 passed, 0 failed, 0 skipped, 1 known-upstream\n", "total: 1 passed, 0 failed, 0 skipped, 1 known-upstream\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
