// csisim test with an upstream driver that is not csisim's: the profile
// docs/profiles/csi-driver-nfs.yaml starts kubernetes-csi/csi-driver-nfs,
// built from source outside the repository, and names it through
// CSISIM_NFS_PLUGIN. Without the variable the run must stop at once,
// saying so; with it, the whole library runs (docs/profiles/README.md has
// the figures).
package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// nfsPluginEnv names the nfsplugin binary built from csi-driver-nfs.
const nfsPluginEnv = "CSISIM_NFS_PLUGIN"

// nfsProfile is the profile, as a user outside the repository root names
// it: its helper scripts are found beside it, from any directory.
var nfsProfile, _ = filepath.Abs("../../docs/profiles/csi-driver-nfs.yaml")

// startWithout runs csisim as start does, with the environment variable
// name unset.
func startWithout(name, tmp string, args ...string) *gexec.Session {
	cmd := exec.Command(csisim, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, name+"=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	cmd.Dir = tmp
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	return s
}

var _ = Describe("csisim test with upstream csi-driver-nfs", func() {
	It("stops at once, naming CSISIM_NFS_PLUGIN, when the variable does not name the driver, and leaves nothing behind", func() {
		tmp := GinkgoT().TempDir()
		s := startWithout(nfsPluginEnv, tmp, "test", "--driver", nfsProfile, "--skip-sanity", "--focus", "^basic-lifecycle$")
		Eventually(s, time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Err.Contents())).To(MatchRegexp(`exited before becoming ready: exit status 2; last output:\n.*run-nfsplugin: .*` +
			nfsPluginEnv + `: is not set: name the nfsplugin binary`))
		expectNothingLeftIn(tmp)
	})

	It("runs csi-sanity and at least 45 library scenarios with nothing failed, each skip naming what the driver lacks", func() {
		if os.Getenv(nfsPluginEnv) == "" {
			Skip(nfsPluginEnv + " is not set: it names the nfsplugin binary built from kubernetes-csi/csi-driver-nfs " +
				"(docs/profiles/csi-driver-nfs.yaml says how)")
		}
		tmp := GinkgoT().TempDir()
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		s := start(tmp, "test", "--driver", nfsProfile, "--parallel", "2", "--junit", report)
		Eventually(s, 15*time.Minute).Should(gexec.Exit(0))
		out := string(s.Out.Contents())
		Expect(out).To(MatchRegexp(`(?m)^csi-sanity: \d+ passed, 0 failed, \d+ skipped`))
		m := regexp.MustCompile(`(?m)^scenarios: (\d+) passed, 0 failed, \d+ skipped$`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), "no scenarios line with 0 failed:\n%s", out)
		passed, _ := strconv.Atoi(m[1])
		Expect(passed).To(BeNumerically(">=", 45))
		// A skip names a capability the driver does not report or the
		// profile does not give it, one the scenario is about a driver
		// without, a flag set it has none of, or that the scenario runs
		// csisim's own driver or deployment manifests.
		why := regexp.MustCompile(`^skipped: (needs .+: (nfs\.csi\.k8s\.io does not report|driver profile csi-driver-nfs lacks)|` +
			`is about a driver without \w+: driver profile csi-driver-nfs declares capabilities\.|` +
			`cluster\.flags \w+: driver profile csi-driver-nfs has no flags\.extra|cluster\.driverName .* starts csisim's own driver|` +
			`deploy: the node plugin's image csisim:e2e .* is not in the images: of driver profile)`)
		for name, result := range testReport(report)["scenarios"] {
			if strings.HasPrefix(result, "skipped: ") {
				Expect(result).To(MatchRegexp(why.String()), "scenario %s", name)
			}
		}
		expectNothingLeftIn(tmp)
	})
})
