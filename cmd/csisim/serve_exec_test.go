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

// kubectl exec, attach and port-forward need a container process to
// stream to, which csisim's simulated kubelets do not run: csisim serve
// refuses them by name, for a pod that exists, instead of a NotFound.
// hookedPodAndDeployment: a pod with a preStop hook, and a Deployment
// csisim models.
const hookedPodAndDeployment = `apiVersion: v1
kind: Pod
metadata: {name: hooked}
spec:
  containers:
  - name: app
    image: busybox
    lifecycle:
      preStop: {exec: {command: [sleep, "5"]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`

var _ = Describe("kubectl exec, attach and port-forward, and fields csisim does not model, against csisim serve", Ordered, func() {
	var kubeconfig, kubectl string
	run := func(args ...string) *gexec.Session {
		s, err := gexec.Start(exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, time.Minute).Should(gexec.Exit())
		return s
	}

	BeforeAll(func() {
		kubectl = kubectlPath()
		tmp := GinkgoT().TempDir()
		kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		server := start(tmp, "serve", "--quiet", "--kubeconfig", kubeconfig)
		Eventually(server.Out, time.Minute).Should(gbytes.Say("kubeconfig " + kubeconfig))
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			expectNothingLeftIn(tmp)
		})
		path := filepath.Join(GinkgoT().TempDir(), "app.yaml")
		Expect(os.WriteFile(path, []byte(claimAndPod), 0o644)).To(Succeed())
		Expect(run("apply", "-f", path).ExitCode()).To(Equal(0))
		Expect(run("wait", "--for=jsonpath={.status.phase}=Running", "pod/app", "--timeout=60s").ExitCode()).To(Equal(0))
	})

	DescribeTable("refuses to stream to a running pod, saying why",
		func(want string, args ...string) {
			s := run(args...)
			Expect(s.ExitCode()).NotTo(Equal(0))
			Expect(string(s.Err.Contents())).To(And(ContainSubstring(want), ContainSubstring("is not supported by csisim serve"),
				ContainSubstring(`pod "app" has no running container`)))
		},
		Entry("exec", "Error from server (MethodNotAllowed): pods/exec (kubectl exec)", "exec", "app", "--", "ls"),
		Entry("attach", "Error from server (MethodNotAllowed): pods/attach (kubectl attach)", "attach", "app"),
		Entry("port-forward", "error upgrading connection: pods/portforward (kubectl port-forward)", "port-forward", "pod/app", "0:80"),
	)

	// What the simulated cluster does not model is refused as an
	// admission plugin refuses: 403 Forbidden, naming the field.
	It("refuses a field csisim does not model, on create and on update", func() {
		path := filepath.Join(GinkgoT().TempDir(), "refused.yaml")
		Expect(os.WriteFile(path, []byte(hookedPodAndDeployment), 0o644)).To(Succeed())
		s := run("apply", "-f", path)
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`Error from server (Forbidden): error when creating "` + path +
			`": pods "hooked" is forbidden: csisim does not model spec.containers[0].lifecycle (it would change when the container counts as started`))
		Expect(string(s.Err.Contents())).To(ContainSubstring("; use --backend realkube --real-nodes"))
		Expect(string(s.Out.Contents())).To(ContainSubstring("deployment.apps/web created"))
		Expect(run("get", "pod/hooked").ExitCode()).NotTo(Equal(0))

		s = run("rollout", "pause", "deployment/web")
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`deployments.apps "web" is forbidden: csisim does not model spec.paused ` +
			`(it would change the rollout: a paused Deployment makes no new ReplicaSet for a changed template); use --backend realkube`))
	})

	It("answers NotFound for a pod that does not exist, as the real server", func() {
		s := run("exec", "nosuch", "--", "ls")
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`Error from server (NotFound): pods "nosuch" not found`))
	})
})
