// csisim sanity tailored to a driver: the profile's sanity.skip with its
// reasons, --sanity-skip and --sanity-focus, end to end.
package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/csisim/csisim/drivers/sanityrun"
)

var _ = Describe("csisim sanity", func() {
	It("runs only the specs --sanity-focus picks, and reports those the profile's sanity.skip and --sanity-skip leave out with their reasons", func() {
		tmp := GinkgoT().TempDir()
		profileFile := filepath.Join(GinkgoT().TempDir(), "known-bug.yaml")
		Expect(os.WriteFile(profileFile, []byte(`name: hostpath.csisim.io
start:
  layout: split
  controller: {path: "{csisim}", args: [driver, --endpoint, "{endpoint}", --root, "{root}", --state-dir, "{stateDir}", --mode, controller]}
  node: {path: "{csisim}", args: [driver, --endpoint, "{endpoint}", --node-id, "{nodeID}", --root, "{root}", --state-dir, "{stateDir}", --mode, node]}
storageClass: {parameters: {kind: directory}}
sanity:
  skip:
    "NodeGetInfo should return appropriate values": known bug 1, for this test
`), 0o644)).To(Succeed())
		result := filepath.Join(GinkgoT().TempDir(), "sanity.json")
		focus := "Identity Service GetPluginInfo|Node Service NodeGet(Capabilities|Info)"
		s := start(tmp, "sanity", "--driver", profileFile, "--sanity-focus", focus,
			"--sanity-skip", "NodeGetCapabilities", "--json-result", result)
		Eventually(s, 3*time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(MatchRegexp(`(?m)^csi-sanity hostpath.csisim.io: [1-9]\d* passed, 0 failed, 2 skipped$`))

		raw, err := os.ReadFile(result)
		Expect(err).NotTo(HaveOccurred())
		var r sanityrun.Report
		Expect(json.Unmarshal(raw, &r)).To(Succeed())
		states := map[string]string{}
		for _, spec := range r.Specs {
			Expect(spec.Name).To(MatchRegexp(focus), "a spec the focus does not pick is reported")
			states[spec.Name] = spec.State + ": " + spec.Message
		}
		Expect(states).To(HaveKeyWithValue("Node Service NodeGetInfo should return appropriate values", "skipped: driver profile: known bug 1, for this test"))
		Expect(states).To(HaveKeyWithValue("Node Service NodeGetCapabilities should return appropriate capabilities", "skipped: skipped by --sanity-skip NodeGetCapabilities"))
		passed := 0
		for name, state := range states {
			if regexp.MustCompile(`^Identity Service GetPluginInfo`).MatchString(name) {
				Expect(state).To(Equal("passed: "), name)
				passed++
			}
		}
		Expect(passed).To(BeNumerically(">", 0), "no GetPluginInfo spec ran")
		expectNothingLeftIn(tmp)
	})
})
