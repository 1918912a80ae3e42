package sanityrun

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

func TestReportSortsSpecsByState(t *testing.T) {
	it := func(text string, state types.SpecState, msg string, withLocation bool) types.SpecReport {
		r := types.SpecReport{LeafNodeType: types.NodeTypeIt, ContainerHierarchyTexts: []string{"Node Service"}, LeafNodeText: text, State: state}
		r.Failure.Message = msg
		if withLocation {
			r.Failure.Location = types.CodeLocation{FileName: "node.go", LineNumber: 7}
		}
		return r
	}
	suite := types.Report{SuiteSucceeded: false, SpecReports: types.SpecReports{
		it("passes", types.SpecStatePassed, "", false),
		it("fails", types.SpecStateFailed, "boom", true),
		it("is skipped by csi-sanity", types.SpecStateSkipped, "NodeGetVolumeHealth not supported", true),
		it("is left out by the focus", types.SpecStateSkipped, "", false),
		it("has a known bug", types.SpecStateSkipped, "", false),
		it("is pending and focused", types.SpecStatePending, "", false),
		it("is pending elsewhere", types.SpecStatePending, "", false),
		{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed},
	}}
	r := report("d", suite, "passes|fails|skipped|focus|focused|profile", []skip{{regexp.MustCompile("known bug"), "driver profile: it leaks"}})
	got := map[string]string{}
	for _, s := range r.Specs {
		got[s.Name] = s.State + ": " + s.Message
	}
	want := map[string]string{
		"Node Service passes":                   "passed: ",
		"Node Service fails":                    "failed: boom",
		"Node Service is skipped by csi-sanity": "skipped: NodeGetVolumeHealth not supported",
		"Node Service is pending and focused":   "skipped: pending: disabled in csi-sanity itself",
		"Node Service has a known bug":          "skipped: driver profile: it leaks",
	}
	if len(got) != len(want) {
		t.Fatalf("specs = %v, want %v", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if r.Count(Failed) != 1 || r.Count(Skipped) != 3 || r.Count(Passed) != 1 {
		t.Errorf("counts: %d passed, %d failed, %d skipped", r.Count(Passed), r.Count(Failed), r.Count(Skipped))
	}
	if r.Error != "" {
		t.Errorf("Error = %q; a failing spec says why the suite failed", r.Error)
	}
}

func TestReportNamesASuiteFailureWithoutFailingSpecs(t *testing.T) {
	suite := types.Report{SuiteSucceeded: false, SpecialSuiteFailureReasons: []string{"Suite Timeout Elapsed"}}
	if r := report("d", suite, "", nil); r.Error != "Suite Timeout Elapsed" {
		t.Fatalf("Error = %q, want the suite's failure reason", r.Error)
	}
}

func TestNotesNameTheFirstFailureThatLeftSomethingBehind(t *testing.T) {
	r := &Report{Specs: []Spec{
		{Name: "passes", State: Passed},
		{Name: "fails cleanly", State: Failed},
		{Name: "leaks", State: Failed, LeftBehind: []string{"a mount at /x/spec-003/staging"}},
		{Name: "fails after", State: Failed},
		{Name: "leaks too", State: Failed, LeftBehind: []string{"/x/spec-005/target (directory not empty)"}},
	}}
	want := `"leaks" failed and its clean-up left a mount at /x/spec-003/staging behind: the likely cause of the 2 failures after it`
	if notes := r.Notes(); len(notes) != 1 || notes[0] != want {
		t.Fatalf("Notes = %q, want [%q]", notes, want)
	}
	if notes := (&Report{Specs: []Spec{{Name: "fails", State: Failed}}}).Notes(); len(notes) != 0 {
		t.Fatalf("Notes of failures that left nothing = %q", notes)
	}
}

// Every spec gets paths of its own, and a path the driver did not clean
// up is recorded for the spec, not left for the next one to trip over.
func TestSpecPathsAreFreshAndRecordLeftovers(t *testing.T) {
	p := newSpecPaths(t.TempDir())
	first, err := p.target("")
	if err != nil {
		t.Fatal(err)
	}
	staging, err := p.staging("")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first, "target"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.remove(first); err == nil {
		t.Fatal("removing a target path that is not empty succeeded")
	}
	if err := p.remove(staging); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]sanity.PathKind{first: sanity.PathIsDir, staging: sanity.PathIsNotFound,
		filepath.Join(first, "target"): sanity.PathIsFile} {
		if got, err := p.kind(path); got != want || err != nil {
			t.Errorf("kind(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	second, err := p.target("")
	if err != nil {
		t.Fatal(err)
	}
	if second == first || filepath.Dir(second) == filepath.Dir(first) {
		t.Fatalf("the second spec's target %s is not its own (the first's was %s)", second, first)
	}
	left := p.leftBehind(ginkgo.CurrentSpecReport().FullText())
	if len(left) != 1 || !strings.Contains(left[0], first) || !strings.Contains(left[0], "directory not empty") {
		t.Fatalf("left behind: %q", left)
	}
}
