// The csisim command as a user runs it: the demo scenario, a malformed
// file, and Ctrl-C in the middle of a run, which must leave no mount,
// directory or driver process behind.
package main_test

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/internal/testenv"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

func TestCLI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "csisim command")
}

var csisim string

var _ = BeforeSuite(func() {
	var err error
	csisim, err = testenv.BuildCsisim()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(testenv.Cleanup)
})

// start runs csisim with its temporary files in a directory of the test's
// own, so that what a run leaves behind can be found.
func start(tmp string, args ...string) *gexec.Session {
	cmd := exec.Command(csisim, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	return s
}

func expectNothingLeftIn(tmp string) {
	entries, err := os.ReadDir(tmp)
	Expect(err).NotTo(HaveOccurred())
	Expect(entries).To(BeEmpty(), "the run left files in %s", tmp)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	Expect(err).NotTo(HaveOccurred())
	Expect(string(mounts)).NotTo(ContainSubstring(tmp), "the run left a mount behind")
	out, _ := exec.Command("pgrep", "-f", tmp).Output()
	Expect(strings.TrimSpace(string(out))).To(BeEmpty(), "the run left a driver process behind")
}

var _ = Describe("csisim run", func() {
	It("runs the basic lifecycle and prints the CSI calls in lifecycle order", func() {
		tmp := GinkgoT().TempDir()
		s := start(tmp, "run", "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(ContainSubstring("PASSED"))
		last := -1
		for _, call := range []string{"CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
			"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume"} {
			i := strings.Index(out, " "+call+" ")
			Expect(i).To(BeNumerically(">", last), "%s is missing or out of order in the timeline", call)
			last = i
		}
		expectNothingLeftIn(tmp)
	})

	It("runs a third-party driver from a profile's command template through the same path", func() {
		// csisim's own driver stands in for a third-party one: started from
		// the templates of a profile file, one process per plugin, under
		// another name, with the capabilities it reports and the profile
		// declares.
		tmp := GinkgoT().TempDir()
		dir := GinkgoT().TempDir()
		profileFile := filepath.Join(dir, "other.yaml")
		Expect(os.WriteFile(profileFile, []byte(`name: other.example.com
start:
  layout: split
  controller: {path: "`+csisim+`", args: [driver, "--endpoint={endpoint}", "--node-id={nodeID}", "--root={root}", "--state-dir={stateDir}", "--driver-name={driverName}"]}
  node: {path: "`+csisim+`", args: [driver, "--endpoint={endpoint}", "--node-id={nodeID}", "--root={root}", "--state-dir={stateDir}", "--driver-name={driverName}"]}
capabilities: {realMounts: true, sharedState: true}
storageClass:
  parameters: {kind: directory}
`), 0o644)).To(Succeed())
		s := start(tmp, "run", "--driver", profileFile, "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(ContainSubstring("PASSED"))
		Expect(string(s.Out.Contents())).To(ContainSubstring("other.example.com"))
		expectNothingLeftIn(tmp)

		// A bare --driver-command declares nothing, but the driver is
		// asked what it can do: it attaches and stages, so the lifecycle
		// runs.
		template := csisim + " driver --endpoint={endpoint} --node-id={nodeID} --root={root} --state-dir={stateDir} --driver-name=other.example.com"
		s = start(tmp, "run", "--driver-command", template, "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(ContainSubstring("PASSED"))
		expectNothingLeftIn(tmp)

		// What it cannot report it lacks: the scenario is skipped, naming
		// what it needs, never run on a guess. Its JUnit report and JSON
		// result say so too, so that a CI job reading them does not count
		// it as passed.
		junitFile, resultFile := filepath.Join(dir, "skipped.xml"), filepath.Join(dir, "skipped.json")
		s = start(tmp, "run", "--driver-command", template, "--driver-name", "other.example.com",
			"--junit", junitFile, "--json-result", resultFile, "../../scenarios/library/expansion-failure-recovery.yaml")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(ContainSubstring("SKIPPED: needs expansionOffline"))
		Expect(string(s.Out.Contents())).NotTo(ContainSubstring("PASSED"))
		raw, err := os.ReadFile(junitFile)
		Expect(err).NotTo(HaveOccurred())
		var report struct {
			Cases []struct {
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testsuite>testcase"`
		}
		Expect(xml.Unmarshal(raw, &report)).To(Succeed())
		Expect(report.Cases).To(HaveLen(1), string(raw))
		Expect(report.Cases[0].Skipped).NotTo(BeNil(), string(raw))
		Expect(report.Cases[0].Skipped.Message).To(ContainSubstring("needs expansionOffline"))
		var result map[string]any
		raw, err = os.ReadFile(resultFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(raw, &result)).To(Succeed())
		Expect(result).To(HaveKeyWithValue("skipped", ContainSubstring("needs expansionOffline")))
		Expect(result).NotTo(HaveKey("failure"))
		expectNothingLeftIn(tmp)
	})

	It("makes the same API writes and CSI calls in the same order for a seed, on one core or two", func() {
		// The multi-node scenario keeps every controller busy at once.
		traceOf := func(seed, gomaxprocs string, scenarioFile ...string) []byte {
			tmp := GinkgoT().TempDir()
			file := filepath.Join(GinkgoT().TempDir(), "trace")
			scenarioPath := "../../scenarios/library/multi-node.yaml"
			if len(scenarioFile) > 0 {
				scenarioPath = scenarioFile[0]
			}
			cmd := exec.Command(csisim, "run", "--quiet", "--seed", seed, "--trace", file, scenarioPath)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "GOMAXPROCS="+gomaxprocs)
			s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
			data, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			expectNothingLeftIn(tmp)
			return data
		}
		first := traceOf("5", "1")
		Expect(string(first)).To(ContainSubstring("NodePublishVolume"))
		Expect(string(traceOf("5", "2"))).To(Equal(string(first)))
		Expect(string(traceOf("5", "2"))).To(Equal(string(first)))
		Expect(string(traceOf("6", "2"))).NotTo(Equal(string(first)), "another seed should give other UIDs and another interleaving")
		// Faults, timers and minutes of virtual time replay the same way.
		nodeLoss := "../../scenarios/library/node-loss-force-detach.yaml"
		lost := traceOf("3", "1", nodeLoss)
		Expect(string(lost)).To(ContainSubstring("Waiting for detach"))
		Expect(string(traceOf("3", "2", nodeLoss))).To(Equal(string(lost)))
		// Calls parked on the virtual clock by a hang, too.
		hang := "../../scenarios/library/csi-publish-hang.yaml"
		hung := traceOf("4", "1", hang)
		Expect(string(hung)).To(ContainSubstring("DeadlineExceeded"))
		Expect(string(traceOf("4", "2", hang))).To(Equal(string(hung)))
	})

	It("names the file, line and problem of a malformed scenario", func() {
		tmp := GinkgoT().TempDir()
		file := filepath.Join(tmp, "bad.yaml")
		Expect(os.WriteFile(file, []byte("name: bad\nsteps:\n  - wait:\n      object: pvc/data\n      equal: Bound\n"), 0o644)).To(Succeed())
		s := start(tmp, "run", file)
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("bad.yaml:5"))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`"equal"`))
		Expect(os.Remove(file)).To(Succeed())
		expectNothingLeftIn(tmp)
	})

	It("tears everything down when interrupted in the middle of a run", func() {
		tmp := GinkgoT().TempDir()
		scenarioDir := GinkgoT().TempDir()
		file := filepath.Join(scenarioDir, "long.yaml")
		Expect(os.WriteFile(file, []byte(longScenario), 0o644)).To(Succeed())
		s := start(tmp, "run", file)
		Eventually(s.Out, 2*time.Minute).Should(gbytes.Say(`NodePublishVolume`))
		Eventually(s.Out, time.Minute).Should(gbytes.Say(`step 4/4 started`))
		s.Interrupt()
		Eventually(s, time.Minute).Should(gexec.Exit(130))
		expectNothingLeftIn(tmp)
	})
})

// longScenario mounts a volume in a pod and then waits for a long time.
const longScenario = `name: long
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: CSIDriver
        metadata: {name: hostpath.csisim.io}
        spec: {attachRequired: true}
        ---
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: sc}
        provisioner: hostpath.csisim.io
        ---
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: sc
          resources: {requests: {storage: 1Gi}}
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
  - sleep: 10m
`

var _ = Describe("csisim run --deploy", func() {
	It("runs the basic lifecycle on csisim's own deployment, saying what it does not honour", func() {
		tmp := GinkgoT().TempDir()
		s := start(tmp, "run", "--quiet", "--deploy", "../../deploy/kubernetes", "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(And(
			ContainSubstring("node DaemonSet csisim/csisim-node (../../deploy/kubernetes/31-node.yaml#1), driver container csisim-plugin"),
			ContainSubstring("honoured: container csisim-plugin (image csisim:e2e): the node plugin, run as {csisim}"),
			ContainSubstring("honoured: container node-driver-registrar (csi-node-driver-registrar) of DaemonSet csisim/csisim-node: "+
				"--csi-address=/csi/csi.sock (must name the driver container's socket"),
			ContainSubstring("honoured: container csi-provisioner (csi-provisioner) of Deployment csisim/csisim-controller: "+
				"--csi-address=/csi/csi.sock (must name the driver container's socket through a shared volume, else the sidecar never connects), "+
				"--leader-election=true (accepted: csisim runs one replica, which leads at once)"),
			ContainSubstring("not honoured: container csi-provisioner (csi-provisioner) of Deployment csisim/csisim-controller: --v=2"),
			ContainSubstring("not honoured: ClusterRole csisim-provisioner (../../deploy/kubernetes/20-rbac-controller.yaml#2): not applied"),
			ContainSubstring("PASSED")))
		expectNothingLeftIn(tmp)
	})

	It("names a sidecar whose flag its binary does not define, as the binary words it, and runs without that sidecar", func() {
		tmp := GinkgoT().TempDir()
		dir := GinkgoT().TempDir()
		entries, err := os.ReadDir("../../deploy/kubernetes")
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			text, err := os.ReadFile(filepath.Join("../../deploy/kubernetes", e.Name()))
			Expect(err).NotTo(HaveOccurred())
			edited := strings.Replace(string(text), "csi-provisioner:v6.4.0\n          args:\n", "csi-provisioner:v6.4.0\n          args:\n            - --foo\n", 1)
			Expect(os.WriteFile(filepath.Join(dir, e.Name()), []byte(edited), 0o644)).To(Succeed())
		}
		s := start(tmp, "run", "--quiet", "--deploy", dir, "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Out.Contents()) + string(s.Err.Contents())).To(And(
			ContainSubstring("fails: container csi-provisioner (csi-provisioner) of Deployment csisim/csisim-controller ("+
				filepath.Join(dir, "30-controller.yaml")+"#1): unknown flag: --foo; the real csi-provisioner exits at start with status 2"),
			ContainSubstring(`FAILED: step 3 "wait pvc/data"`)))
		expectNothingLeftIn(tmp)
	})

	It("gives a DaemonSet that selects no node the real statuses, and no node the driver", func() {
		tmp := GinkgoT().TempDir()
		s := start(tmp, "run", "--quiet", "testdata/deploy-selects-no-node.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(ContainSubstring("PASSED: 4 steps"))
		expectNothingLeftIn(tmp)
	})

	It("refuses a node plugin image the driver profile does not map, naming both", func() {
		tmp := GinkgoT().TempDir()
		dir := GinkgoT().TempDir()
		text, err := os.ReadFile("testdata/deploy-selects-no-node/node.yaml")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "node.yaml"), []byte(strings.Replace(string(text), "image: csisim:e2e", "image: example.com/driver:v1", 1)), 0o644)).To(Succeed())
		s := start(tmp, "run", "--deploy", dir, "../../scenarios/library/basic-lifecycle.yaml")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(And(
			ContainSubstring("the node plugin's image example.com/driver:v1 (container plugin of DaemonSet csi/node)"),
			ContainSubstring("is not in the images: of driver profile drivers/profiles/csisim.yaml (it maps csisim)"),
			ContainSubstring(`add `+"`"+`images: {"example.com/driver": <local command>}`+"`")))
		expectNothingLeftIn(tmp)
	})
})
