package sanityrun

import (
	"testing"

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
		it("is pending and focused", types.SpecStatePending, "", false),
		it("is pending elsewhere", types.SpecStatePending, "", false),
		{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed},
	}}
	r := report("d", suite, "passes|fails|skipped|focus|focused")
	got := map[string]string{}
	for _, s := range r.Specs {
		got[s.Name] = s.State + ": " + s.Message
	}
	want := map[string]string{
		"Node Service passes":                   "passed: ",
		"Node Service fails":                    "failed: boom",
		"Node Service is skipped by csi-sanity": "skipped: NodeGetVolumeHealth not supported",
		"Node Service is pending and focused":   "skipped: pending: disabled in csi-sanity itself",
	}
	if len(got) != len(want) {
		t.Fatalf("specs = %v, want %v", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if r.Count(Failed) != 1 || r.Count(Skipped) != 2 || r.Count(Passed) != 1 {
		t.Errorf("counts: %d passed, %d failed, %d skipped", r.Count(Passed), r.Count(Failed), r.Count(Skipped))
	}
	if r.Error != "" {
		t.Errorf("Error = %q; a failing spec says why the suite failed", r.Error)
	}
}

func TestReportNamesASuiteFailureWithoutFailingSpecs(t *testing.T) {
	suite := types.Report{SuiteSucceeded: false, SpecialSuiteFailureReasons: []string{"Suite Timeout Elapsed"}}
	if r := report("d", suite, ""); r.Error != "Suite Timeout Elapsed" {
		t.Fatalf("Error = %q, want the suite's failure reason", r.Error)
	}
}
