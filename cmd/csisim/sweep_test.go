// csisim run --seeds as a user and a CI job run it: a sweep that passes,
// one made to fail, whose replay commands reproduce each failure alone,
// shards, a seed's trace alone and in a parallel sweep, and Ctrl-C. Each
// seed runs in a child process; the suite checks they all go.
package main_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

const (
	basicLifecycle = "../../scenarios/library/basic-lifecycle.yaml"
	// neverBound fails under every seed: its wait times out after 5 s of
	// cluster time.
	neverBound = "testdata/claim-never-bound.yaml"
)

// seedLine matches a sweep's line for one seed: the seed and its verdict.
var seedLine = regexp.MustCompile(`(?m)^seed (\d+) +(PASS|FAIL|INTR|KNOWN) `)

// verdicts are the seeds of a sweep's output with their verdicts, in the
// order printed.
func verdicts(out string) []string {
	var vs []string
	for _, m := range seedLine.FindAllStringSubmatch(out, -1) {
		vs = append(vs, m[1]+" "+m[2])
	}
	return vs
}

// junitCases reads the test cases of a JUnit report: name and whether it
// failed, with the failure's body.
func junitCases(file string) map[string]string {
	raw, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	var report struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Body string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	Expect(xml.Unmarshal(raw, &report)).To(Succeed(), "the JUnit report is not well-formed:\n%s", raw)
	Expect(report.Suites).To(HaveLen(1))
	cases := map[string]string{}
	for _, c := range report.Suites[0].Cases {
		cases[c.Name] = "passed"
		if c.Failure != nil {
			cases[c.Name] = c.Failure.Body
		}
	}
	return cases
}

var _ = Describe("csisim run --seeds", func() {
	It("runs a passing scenario under each seed and says so, in seed order, whatever the parallelism", func() {
		tmp := GinkgoT().TempDir()
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "run", "--seeds", "1..4,9", "--parallel", "2", "--mock-driver", "--junit", report, basicLifecycle)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(verdicts(out)).To(Equal([]string{"1 PASS", "2 PASS", "3 PASS", "4 PASS", "9 PASS"}))
		Expect(out).To(MatchRegexp(`(?m)^seed 1 +PASS +13 steps +20s of cluster time in \d`))
		Expect(out).To(ContainSubstring("PASSED: 5 seeds"))
		Expect(out).NotTo(ContainSubstring("CreateVolume"), "a sweep prints no timeline")
		Expect(junitCases(report)).To(Equal(map[string]string{"seed 1": "passed", "seed 2": "passed", "seed 3": "passed", "seed 4": "passed", "seed 9": "passed"}))
		expectNothingLeftIn(tmp)
	})

	It("names each failing seed, its first failure and the command that replays it, and exits 1", func() {
		tmp := GinkgoT().TempDir()
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "run", "--seeds", "5..7", "--parallel", "2", "--mock-driver", "--junit", report, neverBound)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		out := string(s.Out.Contents())
		Expect(verdicts(out)).To(Equal([]string{"5 FAIL", "6 FAIL", "7 FAIL"}))
		firstFailure := `step 2 "claim bound" at ` + neverBound + `:24: timed out after 5s waiting for pvc/data {.status.phase} == Bound; last seen: Pending`
		replay := "csisim run --seed 6 --mock-driver " + neverBound
		Expect(out).To(MatchRegexp(`(?m)^seed 6 +FAIL +step 2/2 +5s of cluster time in \d`))
		Expect(out).To(ContainSubstring("    " + firstFailure + "\n    replay: " + replay + "\n"))
		Expect(out).To(ContainSubstring("FAILED: 3 of 3 seeds (seed 5, 6, 7)"))
		cases := junitCases(report)
		Expect(cases).To(HaveLen(3))
		Expect(cases["seed 6"]).To(ContainSubstring(firstFailure))
		Expect(cases["seed 6"]).To(ContainSubstring("replay: " + replay))
		expectNothingLeftIn(tmp)

		By("replaying seed 6 alone, as the sweep says")
		words := strings.Fields(replay)
		Expect(words[0]).To(Equal("csisim"))
		alone := start(tmp, words[1:]...)
		Eventually(alone, 2*time.Minute).Should(gexec.Exit(1))
		Expect(string(alone.Out.Contents())).To(ContainSubstring("seed 6"))
		Expect(string(alone.Err.Contents())).To(ContainSubstring("FAILED: " + firstFailure))
		expectNothingLeftIn(tmp)
	})

	It("writes a JUnit report of a single run too", func() {
		tmp := GinkgoT().TempDir()
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "run", "--seed", "8", "--quiet", "--mock-driver", "--junit", report, neverBound)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		cases := junitCases(report)
		Expect(cases).To(HaveKey("seed 8"))
		Expect(cases["seed 8"]).To(ContainSubstring("replay: csisim run --seed 8 --mock-driver " + neverBound))
		expectNothingLeftIn(tmp)
	})

	It("splits the seeds into disjoint shards that together run every seed", func() {
		tmp := GinkgoT().TempDir()
		var all []string
		for _, sh := range []string{"0/3", "1/3", "2/3"} {
			s := start(tmp, "run", "--seeds", "10..16", "--shard", sh, "--mock-driver", basicLifecycle)
			Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
			Expect(string(s.Out.Contents())).To(ContainSubstring("seeds 10..16, shard " + sh))
			all = append(all, verdicts(string(s.Out.Contents()))...)
		}
		Expect(all).To(ConsistOf("10 PASS", "11 PASS", "12 PASS", "13 PASS", "14 PASS", "15 PASS", "16 PASS"))
		expectNothingLeftIn(tmp)
	})

	It("gives a seed the same trace alone and in a parallel sweep, with csisim's own driver", func() {
		tmp := GinkgoT().TempDir()
		traces := GinkgoT().TempDir()
		s := start(tmp, "run", "--seeds", "2..3", "--parallel", "2", "--trace", filepath.Join(traces, "sweep-{seed}.txt"), basicLifecycle)
		Eventually(s, 3*time.Minute).Should(gexec.Exit(0))
		alone := start(tmp, "run", "--quiet", "--seed", "3", "--trace", filepath.Join(traces, "alone.txt"), basicLifecycle)
		Eventually(alone, 2*time.Minute).Should(gexec.Exit(0))
		inSweep, err := os.ReadFile(filepath.Join(traces, "sweep-3.txt"))
		Expect(err).NotTo(HaveOccurred())
		byItself, err := os.ReadFile(filepath.Join(traces, "alone.txt"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(inSweep)).To(ContainSubstring("NodePublishVolume"))
		Expect(string(inSweep)).To(Equal(string(byItself)))
		other, err := os.ReadFile(filepath.Join(traces, "sweep-2.txt"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(other)).NotTo(Equal(string(inSweep)), "seeds 2 and 3 should differ")
		expectNothingLeftIn(tmp)
	})

	It("tears every seed's cluster down when interrupted, and starts no more", func() {
		tmp := GinkgoT().TempDir()
		file := filepath.Join(GinkgoT().TempDir(), "long.yaml")
		Expect(os.WriteFile(file, []byte(longScenario), 0o644)).To(Succeed())
		// csisim's own driver, so that there are mounts and processes to
		// leave behind; the long scenario sleeps 10 minutes of cluster
		// time with its volume mounted.
		s := start(tmp, "run", "--seeds", "1..6", "--parallel", "2", file)
		Eventually(func() int { return mountsBelow(tmp) }, 2*time.Minute).Should(BeNumerically(">=", 2),
			"the first runs have their volumes mounted")
		s.Interrupt()
		Eventually(s, time.Minute).Should(gexec.Exit(130))
		Expect(s.Out).To(gbytes.Say(`INTERRUPTED: [0-5] of 6 seeds ran`))
		expectNothingLeftIn(tmp)
	})

	DescribeTable("refuses flags that do not go together, saying why",
		func(want string, args ...string) {
			tmp := GinkgoT().TempDir()
			s := start(tmp, append(append([]string{"run"}, args...), basicLifecycle)...)
			Eventually(s, time.Minute).Should(gexec.Exit(2))
			Expect(string(s.Err.Contents())).To(ContainSubstring(want))
			expectNothingLeftIn(tmp)
		},
		Entry("a range backwards", "--seeds 5..2: range 5..2 ends before it starts (5 > 2)", "--seeds", "5..2"),
		Entry("not a number", `--seeds x: "x" is not a seed`, "--seeds", "x"),
		Entry("a range without an end", `--seeds 0..: range "0.." lacks an end`, "--seeds", "0.."),
		Entry("a shard out of range", `--shard 4/4: the shard "4" is not a whole number from 0 to 3`, "--seeds", "1..8", "--shard", "4/4"),
		Entry("a shard without seeds", "--shard is for a sweep of seeds: add --seeds", "--shard", "0/2"),
		Entry("--seed with --seeds", "--seed and --seeds", "--seed", "3", "--seeds", "1..3"),
		Entry("one trace file for many seeds", "--trace t.txt: with --seeds, put {seed} in the file name", "--seeds", "1..3", "--trace", "t.txt"),
		Entry("one driver log for many seeds", "--driver-log d.txt: with --seeds, put {seed} in the file name", "--seeds", "1..3", "--driver-log", "d.txt"),
		Entry("no parallelism", "--parallel 0: at least one seed", "--seeds", "1..3", "--parallel", "0"),
		Entry("the real control plane", "--seeds is for the simulator", "--seeds", "1..3", "--backend", "realkube"),
	)

	It("documents the sweep flags in --help", func() {
		s := start(GinkgoT().TempDir(), "run", "--help")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		// Help asked for is the output: on stdout.
		help := string(s.Out.Contents())
		for _, flag := range []string{"-seeds", "-parallel", "-shard", "-junit", "JOB_COMPLETION_INDEX", "csisim run --seeds A..B"} {
			Expect(help).To(ContainSubstring(flag))
		}
	})
})

// mountsBelow counts the mounts below dir.
func mountsBelow(dir string) int {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	Expect(err).NotTo(HaveOccurred())
	return strings.Count(string(raw), dir)
}
