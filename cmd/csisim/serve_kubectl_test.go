package main_test

import (
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

// What a newcomer tries with kubectl against csisim serve beyond get and
// apply: explain, apply again, logs, events, the workload kinds.

const workloads = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: busybox
        volumeMounts: [{name: www, mountPath: /www}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep}
spec:
  replicas: 1
  selector: {matchLabels: {app: dep}}
  template:
    metadata: {labels: {app: dep}}
    spec:
      containers:
      - {name: dep, image: busybox}
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: snap}
driver: hostpath.csisim.io
deletionPolicy: Delete
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: snap1}
spec:
  volumeSnapshotClassName: snap
  source: {persistentVolumeClaimName: data}
`

// waitingPod is bound to the node by hand and mounts a claim that does
// not exist: the kubelet keeps it in ContainerCreating.
const waitingPod = `apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec:
  nodeName: node-1
  containers:
  - name: app
    image: busybox
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: missing}
`

var _ = Describe("kubectl against csisim serve", Ordered, func() {
	var kubeconfig, kubectl string
	// kubectlRun runs kubectl and returns its session once it exits.
	kubectlRun := func(args ...string) *gexec.Session {
		s, err := gexec.Start(exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(s, time.Minute).Should(gexec.Exit())
		return s
	}
	// quiet runs kubectl, which must succeed and write nothing on stderr
	// (no warning either), and returns its stdout.
	quiet := func(args ...string) string {
		s := kubectlRun(args...)
		Expect(s.ExitCode()).To(Equal(0), "kubectl %v: %s", args, s.Err.Contents())
		Expect(string(s.Err.Contents())).To(BeEmpty(), "kubectl %v wrote on stderr", args)
		return string(s.Out.Contents())
	}
	manifest := func(name, text string) string {
		path := filepath.Join(GinkgoT().TempDir(), name)
		Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
		return path
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
	})

	It("names the kubeconfig's context after the run", func() {
		Expect(strings.TrimSpace(quiet("config", "current-context"))).To(MatchRegexp(`^csisim-run-[0-9]+$`))
	})

	It("explains kinds and fields from the server's OpenAPI schemas", func() {
		Expect(quiet("explain", "pvc.spec")).To(And(
			ContainSubstring("KIND:       PersistentVolumeClaim"),
			ContainSubstring("FIELD: spec <PersistentVolumeClaimSpec>"),
			ContainSubstring("accessModes\t<[]string>"),
			ContainSubstring("storageClassName\t<string>")))
		Expect(quiet("explain", "statefulsets.spec.volumeClaimTemplates")).To(ContainSubstring("<[]PersistentVolumeClaim>"))
		Expect(quiet("explain", "volumeattachments.spec.source", "--output=plaintext-openapiv2")).To(ContainSubstring("persistentVolumeName"))
		// A custom kind's, from the snapshot CRDs.
		Expect(quiet("explain", "volumesnapshots.spec.source")).To(And(
			ContainSubstring("GROUP:      snapshot.storage.k8s.io"),
			ContainSubstring("persistentVolumeClaimName\t<string>")))
		// And the group snapshot CRDs'.
		Expect(quiet("explain", "volumegroupsnapshots.spec.source")).To(And(
			ContainSubstring("GROUP:      groupsnapshot.storage.k8s.io"),
			ContainSubstring("selector\t<Object>")))
	})

	It("applies an existing object again without a warning", func() {
		path := manifest("app.yaml", claimAndPod)
		Expect(quiet("apply", "-f", path)).To(ContainSubstring("pod/app created"))
		Expect(quiet("apply", "-f", path)).To(ContainSubstring("pod/app unchanged"))
		// A change goes as a strategic merge patch computed from the schema.
		changed := manifest("changed.yaml", strings.Replace(claimAndPod, "name: data\nspec:", "name: data\n  labels: {tier: db}\nspec:", 1))
		Expect(quiet("apply", "-f", changed)).To(ContainSubstring("persistentvolumeclaim/data configured"))
		Expect(quiet("get", "pvc", "data", "-o", "jsonpath={.metadata.labels.tier}")).To(Equal("db"))
	})

	It("shows what the built-in workload printed as the container's log", func() {
		quiet("wait", "--for=jsonpath={.status.phase}=Running", "pod/app", "--timeout=60s")
		uid := quiet("get", "pod", "app", "-o", "jsonpath={.metadata.uid}")
		Expect(quiet("logs", "app")).To(Equal("csisim-workload: /data (claim default/data): wrote marker of pod " + uid +
			"; found 0 earlier marker(s); corrupt: none\n"))
		Expect(quiet("logs", "app", "--timestamps")).To(MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z csisim-workload: /data `))
		s := kubectlRun("logs", "app", "--previous")
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`Error from server (BadRequest): previous terminated container "app" in pod "app" not found`))
	})

	It("answers the log of a container still waiting to start as the kubelet does", func() {
		quiet("apply", "-f", manifest("waiting.yaml", waitingPod))
		quiet("wait", "--for=jsonpath={.status.containerStatuses[0].state.waiting.reason}=ContainerCreating", "pod/waiting", "--timeout=60s")
		s := kubectlRun("logs", "waiting")
		Expect(s.ExitCode()).NotTo(Equal(0))
		Expect(string(s.Err.Contents())).To(ContainSubstring(`Error from server (BadRequest): container "app" in pod "waiting" is waiting to start: ContainerCreating`))
		quiet("delete", "pod", "waiting", "--timeout=60s")
	})

	It("lists the events with kubectl events", func() {
		Expect(quiet("events")).To(And(
			MatchRegexp(`LAST SEEN +TYPE +REASON +OBJECT +MESSAGE`),
			MatchRegexp(`Normal +ProvisioningSucceeded +PersistentVolumeClaim/data +Successfully provisioned volume pvc-`)))
		Expect(quiet("events", "--for", "pod/app")).To(And(ContainSubstring("Scheduled"), ContainSubstring("Started"),
			Not(ContainSubstring("ProvisioningSucceeded"))))
	})

	It("gets the workload and snapshot kinds with the real server's columns", func() {
		path := manifest("workloads.yaml", workloads)
		quiet("apply", "-f", path)
		quiet("wait", "--for=jsonpath={.status.readyToUse}=true", "volumesnapshot/snap1", "--timeout=60s")
		quiet("wait", "--for=jsonpath={.status.readyReplicas}=1", "statefulset/web", "deployment/dep", "--timeout=60s")
		for kind, header := range map[string]string{
			"statefulsets":           `^NAME +READY +AGE\nweb +1/1 `,
			"deployments":            `^NAME +READY +UP-TO-DATE +AVAILABLE +AGE\ndep +1/1 +1 +1 `,
			"replicasets":            `^NAME +DESIRED +CURRENT +READY +AGE\ndep-[0-9a-z]+ +1 +1 +1 `,
			"controllerrevisions":    `^NAME +CONTROLLER +REVISION +AGE\nweb-[0-9a-z]+ +statefulset.apps/web +1 `,
			"volumesnapshots":        `^NAME +READYTOUSE +SOURCEPVC +SOURCESNAPSHOTCONTENT +RESTORESIZE +SNAPSHOTCLASS +SNAPSHOTCONTENT +CREATIONTIME +AGE\nsnap1 +true +data +1Gi +snap +snapcontent-`,
			"volumesnapshotcontents": `^NAME +READYTOUSE +RESTORESIZE +DELETIONPOLICY +DRIVER +VOLUMESNAPSHOTCLASS +VOLUMESNAPSHOT +VOLUMESNAPSHOTNAMESPACE +AGE\nsnapcontent-\S+ +true +1073741824 +Delete +hostpath.csisim.io +snap +snap1 +default `,
			"volumesnapshotclasses":  `^NAME +DRIVER +DELETIONPOLICY +AGE\nsnap +hostpath.csisim.io +Delete `,
		} {
			Expect(quiet("get", kind)).To(MatchRegexp(header), "kubectl get %s", kind)
		}
	})

	It("runs a DaemonSet's pods, one per node, with its status and the real server's columns", func() {
		quiet("apply", "-f", manifest("ds.yaml", daemonSet))
		quiet("wait", "--for=jsonpath={.status.numberReady}=1", "daemonset/agent", "--timeout=60s")
		Expect(quiet("get", "ds")).To(MatchRegexp(`^NAME +DESIRED +CURRENT +READY +UP-TO-DATE +AVAILABLE +NODE SELECTOR +AGE\nagent +1 +1 +1 +1 +1 +<none> `))
		Expect(quiet("get", "pods", "-l", "app=agent", "-o",
			"jsonpath={.items[0].metadata.ownerReferences[0].kind} {.items[0].spec.nodeName} {.items[0].metadata.labels.pod-template-generation}")).
			To(Equal("DaemonSet node-1 1"))
		Expect(quiet("get", "events", "--field-selector", "involvedObject.kind=DaemonSet", "-o", "jsonpath={.items[0].reason}")).
			To(Equal("SuccessfulCreate"))
	})
})

// The kubelet gathers volume stats every minute of the cluster's time: a
// serve of its own, at 20 times the wall clock, shows the claim's gauges
// within seconds rather than the minute a serve at wall speed takes.
var _ = Describe("a node's metrics through csisim serve", func() {
	It("serves a node's kubelet_volume_stats metrics through the API server's node proxy", func() {
		ok, kubeconfig := serveForKubectl(time.Minute, "--speed", "20")
		path := filepath.Join(GinkgoT().TempDir(), "app.yaml")
		Expect(os.WriteFile(path, []byte(claimAndPod), 0o644)).To(Succeed())
		ok("apply", "-f", path)
		ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/app", "--timeout=60s")
		Eventually(func() string {
			return ok("get", "--raw", "/api/v1/nodes/node-1/proxy/metrics")
		}, 30*time.Second, time.Second).Should(MatchRegexp(
			`(?m)^kubelet_volume_stats_capacity_bytes\{namespace="default",persistentvolumeclaim="data"\} [0-9.e+]+$`))
		Expect(ok("get", "--raw", "/api/v1/nodes/node-1/proxy/metrics")).To(
			ContainSubstring("# HELP kubelet_volume_stats_used_bytes [ALPHA] Number of used bytes in the volume"))
		out, err := exec.Command(kubectlPath(), "--kubeconfig", kubeconfig,
			"get", "--raw", "/api/v1/nodes/node-1/proxy/stats/summary").CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("nodes/node-1/proxy/stats/summary is not supported by csisim serve"))
	})
})

const daemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox, command: [sleep, "3600"]}]
`
