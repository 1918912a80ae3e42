// csisim test as a driver repository's CI runs it: csi-sanity and the
// scenarios against a driver profile, a scenario skipped for a capability
// the driver lacks, a failing one, the JUnit report and the exit codes.
package main_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// The scenarios of a small directory for csisim test: one that passes on
// any driver, one that needs snapshots (the mock has none) and one made
// to fail.
const (
	anyDriverScenario = `name: claim-and-pod
cluster: {nodes: [node-1]}
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: CSIDriver
        metadata:
          name: ${driver.name}
        spec: {attachRequired: true}
        ---
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: sc}
        provisioner: ${driver.name}
        ---
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: sc
          resources: {requests: {storage: 1Gi}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
`
	needsSnapshots = `name: needs-snapshots
needs: [snapshots]
cluster: {nodes: [node-1]}
steps:
  - sleep: 1s
`
	neverBoundScenario = `name: never-bound
cluster: {nodes: [node-1]}
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: orphan}
        provisioner: nobody.example.com
        ---
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: orphan
          resources: {requests: {storage: 1Gi}}
  - name: claim bound
    wait: {object: pvc/data, jsonPath: '{.status.phase}', equals: Bound, timeout: 5s}
`
)

// testReport is the JUnit report of csisim test: each suite's cases by
// name, with "passed", "skipped: <message>" or "failed: <message>".
func testReport(file string) map[string]map[string]string {
	raw, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	type problem struct {
		Message string `xml:"message,attr"`
	}
	var report struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string   `xml:"name,attr"`
				Failure *problem `xml:"failure"`
				Error   *problem `xml:"error"`
				Skipped *problem `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	Expect(xml.Unmarshal(raw, &report)).To(Succeed(), "the JUnit report is not well-formed:\n%s", raw)
	out := map[string]map[string]string{}
	for _, s := range report.Suites {
		out[s.Name] = map[string]string{}
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				out[s.Name][c.Name] = "failed: " + c.Failure.Message
			case c.Error != nil:
				out[s.Name][c.Name] = "error: " + c.Error.Message
			case c.Skipped != nil:
				out[s.Name][c.Name] = "skipped: " + c.Skipped.Message
			default:
				out[s.Name][c.Name] = "passed"
			}
		}
	}
	return out
}

// scenarioDir writes the scenarios into a directory of their own.
func scenarioDir(scenarios map[string]string) string {
	dir := GinkgoT().TempDir()
	for name, text := range scenarios {
		Expect(os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(text), 0o644)).To(Succeed())
	}
	return dir
}

var _ = Describe("csisim test", func() {
	It("runs the scenarios with the mock, skips one it lacks a capability for, and fails on a failing one", func() {
		tmp := GinkgoT().TempDir()
		dir := scenarioDir(map[string]string{"claim-and-pod": anyDriverScenario, "needs-snapshots": needsSnapshots, "never-bound": neverBoundScenario})
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "test", "--driver", "mock", "--skip-sanity", "--scenarios", dir, "--parallel", "2", "--junit", report)
		Eventually(s, 3*time.Minute).Should(gexec.Exit(1))
		out := string(s.Out.Contents())
		Expect(out).To(MatchRegexp(`(?m)^  PASS  claim-and-pod +\d+ steps`))
		Expect(out).To(MatchRegexp(`(?m)^the driver reports: hostpath.csisim.io .*; controller: .*PUBLISH_UNPUBLISH_VOLUME`))
		// The mock, asked, reports no snapshots: its child says so.
		Expect(out).To(MatchRegexp(`(?m)^  SKIP  needs-snapshots +needs snapshots: hostpath.csisim.io does not report CREATE_DELETE_SNAPSHOT \(ControllerGetCapabilities\)$`))
		Expect(out).To(MatchRegexp(`(?m)^  FAIL  never-bound +step 2/2: .*timed out after 5s`))
		Expect(out).To(ContainSubstring("scenarios: 1 passed, 1 failed, 1 skipped"))
		Expect(out).To(MatchRegexp(`(?m)^total: 1 passed, 1 failed, 1 skipped$`))
		Expect(out).NotTo(ContainSubstring("csi-sanity"), "--skip-sanity runs no csi-sanity")

		cases := testReport(report)
		Expect(cases).NotTo(HaveKey("csi-sanity"))
		Expect(cases["scenarios"]).To(HaveLen(3))
		Expect(cases["scenarios"]["claim-and-pod"]).To(Equal("passed"))
		Expect(cases["scenarios"]["needs-snapshots"]).To(Equal("skipped: needs snapshots: hostpath.csisim.io does not report CREATE_DELETE_SNAPSHOT (ControllerGetCapabilities)"))
		Expect(cases["scenarios"]["never-bound"]).To(HavePrefix("failed: "))
		Expect(cases["scenarios"]["never-bound"]).To(ContainSubstring("timed out after 5s"))
		expectNothingLeftIn(tmp)
	})

	It("passes when nothing fails: csi-sanity against csisim's driver, then the scenarios", func() {
		tmp := GinkgoT().TempDir()
		dir := scenarioDir(map[string]string{"claim-and-pod": anyDriverScenario, "needs-snapshots": needsSnapshots})
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "test", "--driver", "csisim", "--scenarios", dir, "--junit", report)
		Eventually(s, 5*time.Minute).Should(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(MatchRegexp(`(?m)^csi-sanity: [1-9]\d* passed, 0 failed, \d+ skipped`))
		Expect(out).To(MatchRegexp(`(?m)^  PASS  claim-and-pod `))
		Expect(out).To(MatchRegexp(`(?m)^  PASS  needs-snapshots `), "csisim's driver has snapshots")
		Expect(out).To(ContainSubstring("PASSED"))

		cases := testReport(report)
		Expect(len(cases["csi-sanity"])).To(BeNumerically(">", 50))
		Expect(cases["csi-sanity"]).To(HaveKeyWithValue("Node Service NodeGetCapabilities should return appropriate capabilities", "passed"))
		Expect(cases["scenarios"]).To(Equal(map[string]string{"claim-and-pod": "passed", "needs-snapshots": "passed"}))
		expectNothingLeftIn(tmp)
	})

	It("reports the csi-sanity specs that fail, and exits 1", func() {
		// csisim's driver told it has no controller plugin of its own
		// fails csi-sanity's controller specs: a profile whose controller
		// runs in node mode.
		tmp := GinkgoT().TempDir()
		profileFile := filepath.Join(GinkgoT().TempDir(), "broken.yaml")
		Expect(os.WriteFile(profileFile, []byte(`name: hostpath.csisim.io
start:
  layout: split
  controller: {path: "{csisim}", args: [driver, --endpoint, "{endpoint}", --node-id, other, --root, "{root}", --state-dir, "{stateDir}", --mode, node]}
  node: {path: "{csisim}", args: [driver, --endpoint, "{endpoint}", --node-id, "{nodeID}", --root, "{root}", --state-dir, "{stateDir}", --mode, node]}
`), 0o644)).To(Succeed())
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "test", "--driver", profileFile, "--scenarios", scenarioDir(map[string]string{"needs-snapshots": needsSnapshots}),
			"--focus", "CreateVolume|needs-snapshots", "--junit", report)
		Eventually(s, 3*time.Minute).Should(gexec.Exit(1))
		out := string(s.Out.Contents())
		Expect(out).To(MatchRegexp(`(?m)^csi-sanity: \d+ passed, [1-9]\d* failed`))
		Expect(out).To(MatchRegexp(`(?m)^  FAIL  Controller Service .*CreateVolume`))
		Expect(out).To(MatchRegexp(`(?m)^  SKIP  needs-snapshots `))
		Expect(out).To(ContainSubstring("FAILED"))
		failed := 0
		for _, v := range testReport(report)["csi-sanity"] {
			if len(v) > 7 && v[:7] == "failed:" {
				failed++
			}
		}
		Expect(failed).To(BeNumerically(">", 0))
		expectNothingLeftIn(tmp)
	})

	DescribeTable("refuses a usage error with exit code 2",
		func(want string, args ...string) {
			s := start(GinkgoT().TempDir(), append([]string{"test"}, args...)...)
			Eventually(s, time.Minute).Should(gexec.Exit(2))
			Expect(string(s.Err.Contents())).To(ContainSubstring(want))
		},
		Entry("no driver", "--driver is required", "--skip-sanity"),
		Entry("an unknown profile", "no such shipped profile", "--driver", "nosuch"),
		Entry("a bad focus", "--focus", "--driver", "mock", "--focus", "("),
		Entry("no scenarios there", "no scenario files there", "--driver", "mock", "--skip-sanity", "--scenarios", "/nonexistent/*.yaml"),
	)
})
