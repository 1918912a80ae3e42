package main_test

import (
	"fmt"
	"os"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

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

	It("runs basic-lifecycle on the simulator and on a real control plane and reports how they differ", func() {
		names := slices.Concat(realkube.ControlPlaneBinaries, []string{realkube.CSIProvisioner, realkube.CSIAttacher})
		if err := realkube.Available(realkube.BinDir(), names...); err != nil {
			if os.Getenv("CSISIM_REALKUBE") == "required" {
				Fail("CSISIM_REALKUBE=required: " + err.Error())
			}
			Skip(err.Error())
		}
		tmp := GinkgoT().TempDir()
		s := start(tmp, "diff", "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 5*time.Minute).Should(gexec.Exit())
		out := string(s.Out.Contents())
		AddReportEntry(fmt.Sprintf("divergence report for basic-lifecycle (exit %d)", s.ExitCode()), out)
		// Whatever the differences are, both runs ran every step and there
		// is a report. (The real sidecars now and then repeat an idempotent
		// call, which fails the exact CSI call sequence of the last step.)
		Expect(s.ExitCode()).To(BeElementOf(0, 1), "stderr:\n%s", s.Err.Contents())
		Expect(out).To(ContainSubstring("scenario basic-lifecycle"))
		Expect(out).To(MatchRegexp(`simulator: +passed, 13 of 13 steps`))
		Expect(out).To(MatchRegexp(`real: +(passed, |stopped after )13 of 13 steps`))
		Expect(out).To(Or(ContainSubstring("differences:"), ContainSubstring("no differences")))
		expectNothingLeftIn(tmp)
	})
})
