package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("csisim serve --driver", func() {
	It("runs a third-party driver from its profile, with the CSIDriver and default StorageClass the profile describes", func() {
		kubectl := kubectlPath()
		tmp := GinkgoT().TempDir()
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		// A short node name: the driver's name is in the plugin's socket
		// path, under the test's long temporary directory.
		server := start(tmp, "serve", "--quiet", "--driver", "csi-test-mock", "--nodes", "n1", "--kubeconfig", kubeconfig)
		// The first run builds the driver through the module proxy.
		Eventually(server.Out, 10*time.Minute).Should(gbytes.Say("kubeconfig " + kubeconfig))
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			expectNothingLeftIn(tmp)
		})
		ok := func(args ...string) string {
			out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
			return string(out)
		}
		// csi-test's mock needs no attach only when told; its profile
		// says attach, no pod info, and persistent volumes only.
		Expect(ok("get", "csidriver", "io.kubernetes.storage.mock", "-o",
			"jsonpath={.spec.attachRequired} {.spec.podInfoOnMount} {.spec.volumeLifecycleModes}")).To(Equal(`true false ["Persistent"]`))
		Expect(ok("get", "storageclass", "csisim-sc", "-o", "jsonpath={.provisioner}")).To(Equal("io.kubernetes.storage.mock"))
		manifest := filepath.Join(GinkgoT().TempDir(), "app.yaml")
		Expect(os.WriteFile(manifest, []byte(claimAndPod), 0o644)).To(Succeed())
		ok("apply", "-f", manifest)
		ok("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s")
		ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/app", "--timeout=60s")
		ok("delete", "pod", "app", "--timeout=60s")
		ok("delete", "pvc", "data", "--timeout=60s")
	})
})
