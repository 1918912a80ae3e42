package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// kubectlPath finds kubectl; without it the kubectl specs are skipped,
// except in CI, which must have it.
func kubectlPath() string {
	path, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			Fail("kubectl is not on PATH, and CI must run the kubectl tests")
		}
		Skip("kubectl is not on PATH")
	}
	return path
}

const claimAndPod = `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`

var _ = Describe("csisim serve", Ordered, func() {
	var (
		tmp, kubeconfig, kubectl string
		server                   *gexec.Session
	)
	// run runs kubectl against the server and returns its session once it exits.
	run := func(args ...string) *gexec.Session {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, time.Minute).Should(gexec.Exit())
		return s
	}
	ok := func(args ...string) string {
		s := run(args...)
		Expect(s.ExitCode()).To(Equal(0), "kubectl %v: %s", args, s.Err.Contents())
		return string(s.Out.Contents())
	}

	BeforeAll(func() {
		kubectl = kubectlPath()
		tmp = GinkgoT().TempDir()
		kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		server = start(tmp, "serve", "--quiet", "--kubeconfig", kubeconfig)
		Eventually(server.Out, time.Minute).Should(gbytes.Say("kubeconfig " + kubeconfig))
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			_, err := os.Stat(kubeconfig)
			Expect(os.IsNotExist(err)).To(BeTrue(), "the kubeconfig csisim wrote is left behind")
			expectNothingLeftIn(tmp)
		})
	})

	It("applies ordinary manifests with kubectl apply and the volume gets provisioned and mounted", func() {
		manifest := filepath.Join(GinkgoT().TempDir(), "app.yaml")
		Expect(os.WriteFile(manifest, []byte(claimAndPod), 0o644)).To(Succeed())
		out := ok("apply", "-f", manifest)
		Expect(out).To(ContainSubstring("persistentvolumeclaim/data created"))
		Expect(out).To(ContainSubstring("pod/app created"))
		ok("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=60s")
		ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/app", "--timeout=60s")
		// Applying again changes nothing.
		Expect(ok("apply", "-f", manifest)).To(ContainSubstring("persistentvolumeclaim/data unchanged"))
	})

	It("shows objects as YAML, JSON and jsonpath", func() {
		pvName := ok("get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}")
		Expect(pvName).To(MatchRegexp(`^pvc-[0-9a-f-]{36}$`))
		Expect(ok("get", "pvc", "data", "-o", "yaml")).To(And(
			ContainSubstring(`pv.kubernetes.io/bind-completed: "yes"`),
			ContainSubstring("storageClassName: csisim-sc"), // the default class, by admission: the name of every default class csisim makes
			ContainSubstring("- kubernetes.io/pvc-protection")))
		var pv map[string]any
		Expect(json.Unmarshal([]byte(ok("get", "pv", pvName, "-o", "json")), &pv)).To(Succeed())
		Expect(pv).To(HaveKeyWithValue("metadata", HaveKeyWithValue("annotations",
			HaveKeyWithValue("pv.kubernetes.io/provisioned-by", "hostpath.csisim.io"))))
	})

	It("describes claims, volumes and pods with their events", func() {
		Expect(ok("describe", "pvc", "data")).To(And(ContainSubstring("Status:        Bound"), ContainSubstring("ProvisioningSucceeded")))
		Expect(ok("describe", "pod", "app")).To(And(ContainSubstring("Node:"), ContainSubstring("SuccessfulAttachVolume")))
		pvName := ok("get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}")
		Expect(ok("describe", "pv", pvName)).To(And(ContainSubstring("Type:              CSI"), ContainSubstring("hostpath.csisim.io")))
	})

	It("patches with strategic merge, merge and JSON patches", func() {
		ok("patch", "pvc", "data", "-p", `{"metadata":{"labels":{"a":"1"}}}`)
		ok("patch", "pvc", "data", "--type=merge", "-p", `{"metadata":{"labels":{"b":"2"}}}`)
		ok("patch", "pvc", "data", "--type=json", "-p", `[{"op":"add","path":"/metadata/labels/c","value":"3"}]`)
		Expect(ok("get", "pvc", "data", "-o", "jsonpath={.metadata.labels}")).To(MatchJSON(`{"a":"1","b":"2","c":"3"}`))
		s := run("patch", "pvc", "data", "--type=merge", "-p", `{"spec":{"accessModes":["ReadWriteMany"]}}`)
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring("is invalid"))
	})

	It("creates, refuses duplicates and unknown fields, like the real server", func() {
		cm := filepath.Join(GinkgoT().TempDir(), "cm.yaml")
		Expect(os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"), 0o644)).To(Succeed())
		Expect(ok("create", "-f", cm)).To(ContainSubstring("configmap/settings created"))
		s := run("create", "-f", cm)
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`configmaps "settings" already exists`))
		bad := filepath.Join(GinkgoT().TempDir(), "bad.yaml")
		Expect(os.WriteFile(bad, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndatta: {a: b}\n"), 0o644)).To(Succeed())
		s = run("apply", "-f", bad)
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`unknown field "datta"`))
		Expect(run("get", "configmap", "other").ExitCode()).NotTo(Equal(0), "a refused object was stored")
	})

	It("deletes the pod and the claim, and the volume goes with them", func() {
		pvName := strings.TrimSpace(ok("get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}"))
		Expect(ok("delete", "pod", "app", "--timeout=60s")).To(ContainSubstring(`pod "app" deleted`))
		Expect(ok("delete", "pvc", "data", "--timeout=60s")).To(ContainSubstring(`persistentvolumeclaim "data" deleted`))
		ok("wait", "--for=delete", "pv/"+pvName, "--timeout=60s")
		Expect(ok("get", "volumeattachments", "-o", "name")).To(BeEmpty())
	})
})

var _ = Describe("csisim serve --event-ttl", func() {
	It("lets Events expire as kube-apiserver's --event-ttl does", func() {
		kubectl := kubectlPath()
		tmp := GinkgoT().TempDir()
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		server := start(tmp, "serve", "--quiet", "--bare", "--event-ttl", "15s", "--kubeconfig", kubeconfig)
		Eventually(server.Out, time.Minute).Should(gbytes.Say("kubeconfig " + kubeconfig))
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			expectNothingLeftIn(tmp)
		})
		kubectlOut := func(args ...string) string {
			out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
			return string(out)
		}
		event := filepath.Join(GinkgoT().TempDir(), "event.yaml")
		Expect(os.WriteFile(event, []byte(`apiVersion: v1
kind: Event
metadata: {name: hello, namespace: default}
involvedObject: {kind: Pod, name: app, namespace: default}
reason: Hello
message: short-lived
type: Normal
`), 0o644)).To(Succeed())
		// The TTL is long enough for kubectl to see the Event on a loaded
		// machine before it expires.
		kubectlOut("create", "-f", event)
		Expect(kubectlOut("get", "events", "-o", "name")).To(ContainSubstring("event/hello"))
		Eventually(func() string { return kubectlOut("get", "events", "-o", "name") }, time.Minute, 500*time.Millisecond).
			ShouldNot(ContainSubstring("event/hello"))
	})
})
