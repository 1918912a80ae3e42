package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/csisim/csisim/diff"
	"github.com/csisim/csisim/realkube"
)

var _ = Describe("csisim diff", func() {
	It("refuses to run without a scenario", func() {
		s := start(GinkgoT().TempDir(), "diff")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("Usage: csisim diff"))
	})

	It("refuses a driver the real control plane cannot run, and a scenario the driver does not fit, before starting anything", func() {
		s := start(GinkgoT().TempDir(), "diff", "--driver", "mock", "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("--driver mock: it does not run csisim's own driver"))
		s = start(GinkgoT().TempDir(), "diff", "--driver", "csisim-file", "../../scenarios/library/kubelet-block-volume.yaml")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("kubelet-block-volume is not diffed: needs block"))
	})

	It("refuses a fidelity: entry about an object no report can name, before starting anything", func() {
		tmp := GinkgoT().TempDir()
		file := filepath.Join(tmp, "secret.yaml")
		Expect(os.WriteFile(file, []byte("steps:\n  - sleep: 1s\nfidelity:\n  - {object: Secret default/s, why: x}\n"), 0o644)).To(Succeed())
		s := start(tmp, "diff", file)
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring(file + `:4: fidelity: object "Secret default/s": csisim diff compares no Secret`))
	})

	It("runs a scenario on the simulator and on a real control plane and reports how they differ, with each side read back at each step", func() {
		names := slices.Concat(realkube.ControlPlaneBinaries, []string{realkube.CSIProvisioner, realkube.CSIAttacher})
		if err := realkube.Available(realkube.BinDir(), names...); err != nil {
			if os.Getenv("CSISIM_REALKUBE") == "required" {
				Fail("CSISIM_REALKUBE=required: " + err.Error())
			}
			Skip(err.Error())
		}
		// This is also make test's one scenario diffed on a real control
		// plane (the diff package judges the simulator side alone, and
		// unit-tests the text report): the real cluster is not stopped to
		// be looked at, each step's end is marked and the cluster read back
		// as it was then after the run.
		tmp := GinkgoT().TempDir()
		s := start(tmp, "diff", "--json", "../../scenarios/library/kubelet-claim-not-found.yaml")
		Eventually(s, 5*time.Minute).Should(gexec.Exit())
		AddReportEntry(fmt.Sprintf("divergence report for kubelet-claim-not-found (exit %d)", s.ExitCode()), string(s.Out.Contents()))
		// Whatever the differences are, both runs ran every step and there
		// is a report.
		Expect(s.ExitCode()).To(BeElementOf(0, 1), "stderr:\n%s", s.Err.Contents())
		var rep diff.Report
		Expect(json.Unmarshal(s.Out.Contents(), &rep)).To(Succeed())
		Expect(rep.Scenario).To(Equal("kubelet-claim-not-found"))
		for _, side := range []diff.RunResult{rep.Sim, rep.Real} {
			Expect(side.Passed).To(BeTrue(), "%s: %s", side.Backend, side.Error)
			Expect(side.Steps).To(Equal(side.Total), side.Backend)
			Expect(side.Snapshots).To(HaveLen(side.Total), side.Backend)
			// The step that waited for the second FailedMount shows the
			// count 2; on the real cluster the pod is Pending then, though
			// it ran later, and the claim's apply does not yet show it
			// running.
			Expect(side.Snapshots[9].Objects["Pod default/app"].Events["FailedMount"].Count).To(BeEquivalentTo(2), "%s after step 10", side.Backend)
		}
		at := func(step int) diff.Object { return rep.Real.Snapshots[step-1].Objects["Pod default/app"] }
		Expect([]string{at(10).Phase, at(12).Phase, at(13).Phase}).To(Equal([]string{"Pending", "Pending", "Running"}),
			"the real pod after step 10, the claim's apply (12) and the wait for Running (13)")
		Expect(rep.Sim.Backend).To(Equal("simulator"))
		Expect(rep.Real.Backend).To(Equal("real"))
		expectNothingLeftIn(tmp)
	})
})
