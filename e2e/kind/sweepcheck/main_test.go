package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shardReport writes a report of a shard as csisim run --junit does: the
// seeds, the failing ones with their message and replay command run in
// the image.
func shardReport(t *testing.T, dir string, shard int, seeds []int, failing map[int]bool) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "<testsuites name=\"csisim\"><testsuite name=\"sc\" tests=\"%d\">\n", len(seeds))
	for _, s := range seeds {
		fmt.Fprintf(&b, "<testcase name=\"seed %d\" classname=\"sc\" time=\"0.1\">", s)
		if failing[s] {
			fmt.Fprintf(&b, "<failure message=\"step 2 at /lib/sc.yaml:20: boom\" type=\"step\">FAILED\nreplay: csisim run --seed %d --mock-driver /lib/sc.yaml\n</failure>", s)
		}
		b.WriteString("</testcase>\n")
	}
	b.WriteString("</testsuite></testsuites>\n")
	p := filepath.Join(dir, fmt.Sprintf("junit-%d.xml", shard))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shards  [][]int
		failing map[int]bool
		args    []string
		code    int
		want    []string
	}{
		{name: "every seed once", shards: [][]int{{1, 3, 5}, {2, 4, 6}}, code: 0,
			want: []string{"ran seeds 1..6 once each"}},
		{name: "the seeded failure", shards: [][]int{{1, 3, 5}, {2, 4, 6}}, failing: map[int]bool{4: true}, args: []string{"--expect-fail", "4"}, code: 0,
			want: []string{"seed 4 FAILED in sc shard 1: step 2 at scenarios/sc.yaml:20: boom", "replay here: csisim run --seed 4 --mock-driver scenarios/sc.yaml"}},
		{name: "a failure nobody seeded", shards: [][]int{{1, 3, 5}, {2, 4, 6}}, failing: map[int]bool{5: true}, code: 1,
			want: []string{"FAIL: seed 5 failed, and no failure was seeded there"}},
		{name: "the seeded failure did not show", shards: [][]int{{1, 3, 5}, {2, 4, 6}}, args: []string{"--expect-fail", "4"}, code: 1,
			want: []string{"FAIL: seed 4 was to fail (a seeded failure) and did not"}},
		{name: "a seed missing", shards: [][]int{{1, 3, 5}, {2, 4}}, code: 1,
			want: []string{"FAIL: 1 seeds of the range ran in no shard: 6"}},
		{name: "a seed twice", shards: [][]int{{1, 3, 5}, {2, 4, 5, 6}}, code: 1,
			want: []string{"FAIL: seed 5 ran twice, in sc shard 0 and sc shard 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--seeds", "1..6", "--map", "/lib=scenarios", "--out", filepath.Join(dir, "merged.xml")}, tc.args...)
			for i, seeds := range tc.shards {
				args = append(args, shardReport(t, dir, i, seeds, tc.failing))
			}
			var out, errOut strings.Builder
			if code := run(args, &out, &errOut); code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			merged, err := readReport(filepath.Join(dir, "merged.xml"))
			if err != nil {
				t.Fatal(err)
			}
			if len(merged) != len(tc.shards) {
				t.Errorf("merged report has %d suites, want one per shard", len(merged))
			}
		})
	}
}

// TestReplay runs a failure's replay command with a csisim that fails the
// same way, and one that does not.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same")
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(same, []byte("#!/bin/sh\necho 'FAILED: boom at seed'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho PASSED\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := failure{seed: 4, shard: "sc shard 1", message: "boom", replay: "csisim run --seed 4 x.yaml"}
	var out strings.Builder
	if err := replay(same, f, &out); err != nil {
		t.Errorf("replay with a csisim that fails the same way: %v", err)
	}
	if err := replay(other, f, &out); err == nil || !strings.Contains(err.Error(), "want exit 1") {
		t.Errorf("replay with a csisim that passes: %v", err)
	}
	f.replay = "rm -rf /"
	if err := replay(same, f, &out); err == nil {
		t.Error("replay ran a command that is not csisim's")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, args := range [][]string{{"--seeds", "1..6"}, {"--seeds", "6..1", "x.xml"}, {"--seeds", "1..6", "--expect-fail", "x", "a.xml"}, {"--seeds", "1..6", "--map", "nope", "a.xml"}} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}
