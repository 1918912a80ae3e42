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
		// A short node name: the driver's name is in the plugin's socket
		// path, under the test's long temporary directory. The first run
		// builds the driver through the module proxy.
		ok, _ := serveForKubectl(10*time.Minute, "--driver", "csi-test-mock", "--nodes", "n1")
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

var _ = Describe("csisim serve --extra-driver", func() {
	It("runs a file-storage driver beside csisim's: CSINode lists both, and a pod mounts a volume of each", func() {
		ok, kubeconfig := serveForKubectl(2*time.Minute, "--extra-driver", "csisim-file=shares.csisim.io", "--nodes", "n1")
		Eventually(func() string {
			out, _ := exec.Command(kubectlPath(), "--kubeconfig", kubeconfig, "get", "csinode", "n1", "-o", "jsonpath={.spec.drivers[*].name}").Output()
			return string(out)
		}, time.Minute).Should(SatisfyAll(ContainSubstring("hostpath.csisim.io"), ContainSubstring("shares.csisim.io")))
		// The extra driver reports no PUBLISH_UNPUBLISH_VOLUME: its CSIDriver says so.
		Expect(ok("get", "csidriver", "shares.csisim.io", "-o", "jsonpath={.spec.attachRequired}")).To(Equal("false"))
		Expect(ok("get", "storageclass", "shares.csisim.io", "-o", "jsonpath={.provisioner}")).To(Equal("shares.csisim.io"))
		manifest := filepath.Join(GinkgoT().TempDir(), "app.yaml")
		Expect(os.WriteFile(manifest, []byte(twoDriversPod), 0o644)).To(Succeed())
		ok("apply", "-f", manifest)
		ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/app", "--timeout=60s")
		Expect(ok("get", "pv", "-o", "jsonpath={.items[*].spec.csi.driver}")).To(SatisfyAll(
			ContainSubstring("hostpath.csisim.io"), ContainSubstring("shares.csisim.io")))
		ok("delete", "pod", "app", "--timeout=60s")
		ok("delete", "pvc", "block", "files", "--timeout=60s")
	})
})

// twoDriversPod is a pod with a claim of csisim's default class and one of
// the extra driver's.
const twoDriversPod = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: block}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: files}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: shares.csisim.io
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts:
    - {name: block, mountPath: /block}
    - {name: files, mountPath: /files}
  volumes:
  - {name: block, persistentVolumeClaim: {claimName: block}}
  - {name: files, persistentVolumeClaim: {claimName: files}}
`

// serveForKubectl starts csisim serve with args, waits up to startWithin
// for its kubeconfig, and stops it when the spec ends, checking that it
// left nothing behind. It returns a kubectl against it, which fails the
// spec on an error and returns what kubectl printed, and the kubeconfig.
func serveForKubectl(startWithin time.Duration, args ...string) (ok func(args ...string) string, kubeconfig string) {
	kubectl := kubectlPath()
	tmp := GinkgoT().TempDir()
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	server := start(tmp, append(append([]string{"serve", "--quiet"}, args...), "--kubeconfig", kubeconfig)...)
	Eventually(server.Out, startWithin).Should(gbytes.Say("kubeconfig " + kubeconfig))
	DeferCleanup(func() {
		server.Interrupt()
		Eventually(server, time.Minute).Should(gexec.Exit(0))
		expectNothingLeftIn(tmp)
	})
	return func(args ...string) string {
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
		return string(out)
	}, kubeconfig
}
