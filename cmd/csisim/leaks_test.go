// Runs that end badly leave nothing behind: a raw-block run interrupted at
// random moments, a SIGKILLed run swept by the next run and by csisim
// clean, and a driver that dies named in the failure.
package main_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// blockScenario is the library's raw-block scenario: two layers of loop
// devices per run (the driver's, and the kubelet's on the mapped device).
const blockScenario = "../../scenarios/library/kubelet-block-volume.yaml"

// leakSample is the library scenarios the SIGTERM spec interrupts: a
// seeded sample of CSISIM_LEAK_SCENARIOS of them (10 unless set: the
// library's normal ends are checked for leftovers in scenarios/library), or
// every one with CSISIM_LEAK_SCENARIOS=all (make leaks-all: run it when
// you change how a run ends or cleans up). The sample is the same from
// run to run: a failure comes back with its seed.
func leakSample(library []string, rng *rand.Rand) []string {
	n := 10
	switch s := os.Getenv("CSISIM_LEAK_SCENARIOS"); s {
	case "all":
		return library
	case "":
	default:
		_, err := fmt.Sscan(s, &n)
		Expect(err).NotTo(HaveOccurred(), "CSISIM_LEAK_SCENARIOS")
	}
	if n >= len(library) {
		return library
	}
	sample := slices.Clone(library)
	rng.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	sample = sample[:n]
	slices.Sort(sample)
	return sample
}

// loopDevicesOf lists the attached loop devices that belong to runs in
// tmp: backed by a file below tmp, or by "/", which is how the kernel names
// a device node whose bind mount below a run root is gone (the kubelet's
// layer of a leaked block volume). Devices backed by "/" before the test
// (others') are passed in not to count.
func loopDevicesOf(tmp string, before map[string]bool) []string {
	var out []string
	entries, _ := os.ReadDir("/sys/block")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "loop", "backing_file"))
		if err != nil {
			continue
		}
		backing := strings.TrimSpace(string(raw))
		if strings.HasPrefix(backing, tmp+"/") || (backing == "/" && !before[e.Name()]) {
			out = append(out, "/dev/"+e.Name()+" ("+backing+")")
		}
	}
	return out
}

func orphanedLoops() map[string]bool {
	m := map[string]bool{}
	for _, d := range loopDevicesOf("/nonexistent", map[string]bool{}) {
		m[strings.TrimPrefix(strings.Fields(d)[0], "/dev/")] = true
	}
	return m
}

// runUntilLine starts csisim and reads its output until line n (1-based)
// has been read, then sends sig; it returns the command, whose output is
// still being drained, and the lines read so far.
func runUntilLine(tmp string, n int, extraDelay time.Duration, sig syscall.Signal, args ...string) (*exec.Cmd, <-chan error) {
	cmd := exec.Command(csisim, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = GinkgoWriter
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	r := bufio.NewReader(out)
	for i := 0; i < n; i++ {
		line, err := r.ReadString('\n')
		fmt.Fprint(GinkgoWriter, line)
		if err != nil {
			break // it ended first
		}
	}
	time.Sleep(extraDelay)
	_ = cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() {
		_, _ = io.Copy(GinkgoWriter, r)
		done <- cmd.Wait()
	}()
	return cmd, done
}

func exitCode(cmd *exec.Cmd, done <-chan error) int {
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		Fail("csisim did not exit within a minute of the signal")
	}
	return cmd.ProcessState.ExitCode()
}

var _ = Describe("runs that end badly", func() {
	It("leave no loop device, mount, file or process when interrupted at random moments of a raw-block run", func() {
		// 8 unless CSISIM_INTERRUPTED_RUNS says (make leaks-all: 40),
		// two of them during start-up.
		runs := 8
		if s := os.Getenv("CSISIM_INTERRUPTED_RUNS"); s != "" {
			_, err := fmt.Sscan(s, &runs)
			Expect(err).NotTo(HaveOccurred())
		}
		// Seeded, so a failing moment comes back: the seed and the line
		// are in the failure message.
		const seed = 11
		rng := rand.New(rand.NewPCG(seed, 0))
		before := orphanedLoops()
		for i := 0; i < runs; i++ {
			// Line 1 is the header, printed just before the cluster
			// starts: with a delay after it the signal lands during
			// start-up (driver processes being launched). Later lines
			// are the timeline: the volume provisioned, attached, mapped
			// as a block device, unmapped, and the teardown after it.
			line, delay := 1+rng.IntN(100), time.Duration(rng.IntN(5))*time.Millisecond
			if i%4 == 0 {
				// Starting the drivers takes longer than this, more so
				// on a loaded machine.
				line, delay = 1, time.Duration(rng.IntN(150))*time.Millisecond
			}
			where := fmt.Sprintf("run %d (seed %d): SIGINT %s after output line %d", i+1, seed, delay, line)
			By(where)
			tmp := GinkgoT().TempDir()
			cmd, done := runUntilLine(tmp, line, delay, syscall.SIGINT, "run", blockScenario)
			Expect(exitCode(cmd, done)).To(Equal(130), where)
			Expect(loopDevicesOf(tmp, before)).To(BeEmpty(), where)
			expectNothingLeftIn(tmp)
		}
	})

	It("leave nothing when terminated (SIGTERM) at a random moment, for scenarios of the library", func() {
		library, err := filepath.Glob("../../scenarios/library/*.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(len(library)).To(BeNumerically(">", 20))
		const seed = 12
		rng := rand.New(rand.NewPCG(seed, 0))
		library = leakSample(library, rng)
		before := orphanedLoops()
		interrupted := 0
		for _, file := range library {
			// Every library scenario prints more than 40 lines; the
			// quickest finish within milliseconds of their last, so a
			// signal may come too late: such a run must have passed,
			// and must leave nothing either.
			line := 1 + rng.IntN(40)
			where := fmt.Sprintf("%s (seed %d): SIGTERM after output line %d", filepath.Base(file), seed, line)
			By(where)
			tmp := GinkgoT().TempDir()
			cmd, done := runUntilLine(tmp, line, 0, syscall.SIGTERM, "run", file)
			code := exitCode(cmd, done)
			Expect(code).To(BeElementOf(130, 0), where)
			if code == 130 {
				interrupted++
			}
			Expect(loopDevicesOf(tmp, before)).To(BeEmpty(), where)
			expectNothingLeftIn(tmp)
		}
		Expect(interrupted).To(BeNumerically(">=", 2*len(library)/3), "runs interrupted before they ended")
	})

	It("leave nothing when a step of a raw-block run fails", func() {
		scenarioFile := filepath.Join(GinkgoT().TempDir(), "failing.yaml")
		Expect(os.WriteFile(scenarioFile, []byte(strings.Replace(heldBlockScenario, "timeout: 20h", "timeout: 1m", 1)), 0o644)).To(Succeed())
		tmp := GinkgoT().TempDir()
		before := orphanedLoops()
		s := start(tmp, "run", "--quiet", scenarioFile)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`FAILED: step 3 "wait pod/never"`))
		Expect(loopDevicesOf(tmp, before)).To(BeEmpty())
		expectNothingLeftIn(tmp)
	})

	It("sweeps a SIGKILLed run's leftovers on the next run, and with csisim clean", func() {
		scenarioFile := filepath.Join(GinkgoT().TempDir(), "held.yaml")
		Expect(os.WriteFile(scenarioFile, []byte(heldBlockScenario), 0o644)).To(Succeed())
		before := orphanedLoops()
		killed := func(tmp string) {
			// Killed once the block volume is mapped into the pod.
			cmd, done := runUntilLine(tmp, 1, 0, 0, "run", scenarioFile)
			Eventually(func() int { return len(loopDevicesOf(tmp, before)) }, time.Minute, 10*time.Millisecond).Should(Equal(2),
				"the driver's and the kubelet's loop device")
			Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
			exitCode(cmd, done)
			roots, _ := filepath.Glob(filepath.Join(tmp, "csisim-run-*"))
			Expect(roots).To(HaveLen(1), "a SIGKILLed run cannot clean up")
			Expect(loopDevicesOf(tmp, before)).To(HaveLen(2))
		}

		By("the next run")
		tmp := GinkgoT().TempDir()
		killed(tmp)
		s := start(tmp, "run", "--quiet", "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Err.Contents())).To(MatchRegexp(`removed what a dead run left: \S+csisim-run-\S+: .*2 loop devices`))
		Expect(loopDevicesOf(tmp, before)).To(BeEmpty())
		expectNothingLeftIn(tmp)

		By("csisim clean, after a dry run that removes nothing")
		tmp = GinkgoT().TempDir()
		killed(tmp)
		s = start(tmp, "clean", "--dry-run")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(MatchRegexp(`would remove \S+csisim-run-\S+: .*2 loop devices, \d+ mounts`))
		Expect(loopDevicesOf(tmp, before)).To(HaveLen(2))
		s = start(tmp, "clean")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(MatchRegexp(`removed \S+csisim-run-\S+: .*2 loop devices, \d+ mounts`))
		Expect(loopDevicesOf(tmp, before)).To(BeEmpty())
		expectNothingLeftIn(tmp)
		s = start(tmp, "clean")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(ContainSubstring("no dead run left anything"))
	})

	It("names a driver that dies during the run, in the timeline and in the failure", func() {
		tmp := GinkgoT().TempDir()
		dir := GinkgoT().TempDir()
		// The cluster's node plugin dies on its own once it has mounted
		// the pod's volume, while the scenario's last wait (10h of
		// cluster time, two wall seconds of an idle cluster) is still
		// waiting: not a fixed wall time after it started, which a
		// loaded machine can reach before the plugin is ready or after
		// the wait has timed out. The controller plugin and the node
		// plugin csisim asks about itself before the run (its endpoint
		// under asked/) live on.
		wrapper := filepath.Join(dir, "dying-driver")
		Expect(os.WriteFile(wrapper, []byte(`#!/bin/sh
case "$*" in
*--node-id=controller*|*/asked/*) exec "$CSISIM" "$@" ;;
esac
sock=$(echo "$*" | sed -n 's|.*--endpoint=\(unix://\)*\([^ ]*\).*|\2|p')
runroot=${sock%%/nodes/*}
"$CSISIM" "$@" & pid=$!
until grep -q " $runroot/.*kubernetes.io~csi/.*/mount " /proc/self/mountinfo; do sleep 0.02; done
kill -9 $pid; exit 3
`), 0o755)).To(Succeed())
		scenarioFile := filepath.Join(dir, "long.yaml")
		Expect(os.WriteFile(scenarioFile, []byte(longScenario+"  - wait: {object: pod/never, jsonPath: '{.status.phase}', equals: Running, timeout: 10h}\n"), 0o644)).To(Succeed())
		cmd := exec.Command(csisim, "run", "--driver-command",
			wrapper+" driver --endpoint={endpoint} --node-id={nodeID} --root={root} --state-dir={stateDir}", scenarioFile)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CSISIM="+csisim)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Out.Contents())).To(MatchRegexp(`FAULT csisim +driver-exited +node plugin on node-1 +ERROR: exited with status 3`))
		Expect(string(s.Err.Contents())).To(MatchRegexp(`FAILED: step \d+ .*\n  meanwhile: node plugin on node-1 exited with status 3 \(pid \d+\)`))
		expectNothingLeftIn(tmp)
	})
})

// heldBlockScenario maps a raw block volume into a pod and then waits,
// for many hours of cluster time, for something that never comes.
var heldBlockScenario = func() string {
	data, err := os.ReadFile(blockScenario)
	if err != nil {
		panic(err)
	}
	steps, _, _ := strings.Cut(string(data), "  - wait: {object: pvc/raw")
	return steps + `  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 1m}
  - wait: {object: pod/never, jsonPath: '{.status.phase}', equals: Running, timeout: 20h}
`
}()
