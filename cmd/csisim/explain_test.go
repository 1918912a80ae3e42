package main_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var _ = Describe("csisim explain", func() {
	It("refuses a kind it does not know, naming those it does", func() {
		s := start(GinkgoT().TempDir(), "explain", "deployment/app")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("csisim explain knows the kinds node, pod, pv, pvc, volumeattachment (va), volumesnapshot (vs)"))
	})

	It("explains a claim of a live cluster (csisim serve) that no provisioner serves", func() {
		tmp := GinkgoT().TempDir()
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		server := start(tmp, "serve", "--quiet", "--kubeconfig", kubeconfig, "--without", "external-provisioner")
		Eventually(server.Out, time.Minute).Should(gbytes.Say("kubeconfig " + kubeconfig))
		DeferCleanup(func() {
			server.Interrupt()
			Eventually(server, time.Minute).Should(gexec.Exit(0))
			expectNothingLeftIn(tmp)
		})
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().PersistentVolumeClaims("team").Create(context.Background(), &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		// The flags after the object, as kubectl allows.
		s := start(tmp, "explain", "--kubeconfig", kubeconfig, "persistentvolumeclaim/data", "-n", "team")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(And(
			ContainSubstring("1. PersistentVolumeClaim team/data: Pending"),
			ContainSubstring("waits for the external-provisioner of hostpath.csisim.io to make its volume"),
			ContainSubstring("persistentvolume-controller ExternalProvisioning"),
			ContainSubstring("Next: Is the csi-provisioner sidecar of hostpath.csisim.io running?")))

		s = start(tmp, "explain", "--kubeconfig", kubeconfig, "pvc", "gone")
		Eventually(s, time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Err.Contents())).To(ContainSubstring("PersistentVolumeClaim default/gone not found"))
	})
})

var _ = Describe("csisim explain --trace", func() {
	It("explains the object at the end of a finished run, from its JSON timeline", func() {
		tmp := GinkgoT().TempDir()
		run := start(tmp, "run", "--mock-driver", "--format", "json", "../../scenarios/library/kubelet-missing-driver.yaml")
		Eventually(run, 2*time.Minute).Should(gexec.Exit(0))
		file := filepath.Join(GinkgoT().TempDir(), "run.jsonl")
		Expect(os.WriteFile(file, run.Out.Contents(), 0o644)).To(Succeed())

		s := start(tmp, "explain", "--trace", file, "pod/app")
		Eventually(s, time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(And(
			ContainSubstring("1. Pod default/app: Pending"),
			ContainSubstring("not found in the list of registered CSI drivers"),
			ContainSubstring("2. Node node-1: driver missing.csi.example.com not registered")))

		s = start(tmp, "explain", "--trace", file, "pvc/nothing")
		Eventually(s, time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Err.Contents())).To(ContainSubstring("PersistentVolumeClaim default/nothing not found"))

		// The text timeline is not the JSON one: said, with the fix.
		text := filepath.Join(GinkgoT().TempDir(), "run.txt")
		Expect(os.WriteFile(text, []byte("+0.000s  API  x\n"), 0o644)).To(Succeed())
		s = start(tmp, "explain", "--trace", text, "pod/app")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("--trace reads the timeline csisim run --format json writes"))
		expectNothingLeftIn(tmp)
	})
})

var _ = Describe("csisim run --explain", func() {
	It("explains the object at the end of the run, from its history", func() {
		tmp := GinkgoT().TempDir()
		s := start(tmp, "run", "--quiet", "--mock-driver", "--explain", "pod/app", "../../scenarios/library/kubelet-missing-driver.yaml")
		Eventually(s, 2*time.Minute).Should(gexec.Exit(0))
		Expect(string(s.Out.Contents())).To(And(
			ContainSubstring("PASSED"),
			ContainSubstring("Why Pod default/app is where it is, at the end of the run:"),
			ContainSubstring("1. Pod default/app: Pending"),
			ContainSubstring("not found in the list of registered CSI drivers"),
			ContainSubstring("2. Node node-1: driver missing.csi.example.com not registered")))
		expectNothingLeftIn(tmp)
	})

	It("refuses a target it cannot read before the run", func() {
		s := start(GinkgoT().TempDir(), "run", "--mock-driver", "--explain", "pvc", "../../scenarios/library/kubelet-missing-driver.yaml")
		Eventually(s, time.Minute).Should(gexec.Exit(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring("--explain: \"pvc\": want KIND/NAME"))
	})
})

// waitsForAStuckPod waits for a pod that never runs: its volume's driver
// is on no node.
const waitsForAStuckPod = `name: waits-for-a-stuck-pod
cluster: {nodes: [node-1]}
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: CSIDriver
        metadata: {name: missing.csi.example.com}
        spec: {attachRequired: false}
        ---
        apiVersion: v1
        kind: PersistentVolume
        metadata: {name: elsewhere}
        spec:
          capacity: {storage: 1Gi}
          accessModes: [ReadWriteOnce]
          storageClassName: ""
          csi: {driver: missing.csi.example.com, volumeHandle: vol-elsewhere}
        ---
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], storageClassName: "", volumeName: elsewhere, resources: {requests: {storage: 1Gi}}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 30s}
`

var _ = Describe("csisim run with a failed wait", func() {
	It("explains the object the step waited for", func() {
		tmp := GinkgoT().TempDir()
		file := filepath.Join(GinkgoT().TempDir(), "stuck.yaml")
		Expect(os.WriteFile(file, []byte(waitsForAStuckPod), 0o644)).To(Succeed())
		s := start(tmp, "run", "--quiet", "--mock-driver", file)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		Expect(string(s.Err.Contents())).To(And(
			ContainSubstring("FAILED: step 2"),
			ContainSubstring("Why Pod default/app is where it is (csisim explain):"),
			ContainSubstring("2. Node node-1: driver missing.csi.example.com not registered")))
		expectNothingLeftIn(tmp)
	})
})

// stageHangs waits for a pod whose NodeStageVolume never returns: when the
// wait gives up, the call is still in flight; the cluster's shutdown then
// cuts it off.
const stageHangs = `name: stage-hangs
cluster: {nodes: [node-1]}
steps:
  - apply:
      manifest: |
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: sc}
        provisioner: hostpath.csisim.io
  - csiHang: {method: NodeStageVolume}
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], storageClassName: sc, resources: {requests: {storage: 1Gi}}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 60s}
`

var _ = Describe("csisim explain of a call that hangs", func() {
	It("names the call in flight, not the shutdown's error, after the failed wait and --at a time of the run", func() {
		tmp := GinkgoT().TempDir()
		file := filepath.Join(GinkgoT().TempDir(), "stage-hangs.yaml")
		Expect(os.WriteFile(file, []byte(stageHangs), 0o644)).To(Succeed())
		s := start(tmp, "run", "--mock-driver", "--format", "json", file)
		Eventually(s, 2*time.Minute).Should(gexec.Exit(1))
		// The NodeStageVolume cut off by the shutdown is in the timeline...
		Expect(string(s.Out.Contents())).To(MatchRegexp(`"verb":"NodeStageVolume".*"startedAtText":"\+10\.000s"`))
		// ... and is no cause: the wait gave up while it was in flight.
		Expect(string(s.Err.Contents())).To(And(
			ContainSubstring("FAILED: step 4"),
			ContainSubstring("Why Pod default/app is where it is (csisim explain):"),
			MatchRegexp(`2\. PersistentVolume pvc-\S+: NodeStageVolume in flight for 50s`),
			ContainSubstring("The kubelet on node-1 sent NodeStageVolume")))
		Expect(string(s.Err.Contents())).NotTo(Or(ContainSubstring("connection is closing"), ContainSubstring("error reading from server")))
		timeline := filepath.Join(GinkgoT().TempDir(), "run.jsonl")
		Expect(os.WriteFile(timeline, s.Out.Contents(), 0o644)).To(Succeed())

		for _, tt := range []struct {
			at, want string
		}{
			{"", "NodeStageVolume in flight for 50s"},
			{"30s", "NodeStageVolume in flight for 20s"},
			{"+5.000s", "its volumes show nothing in the way"},
		} {
			args := []string{"explain", "--trace", timeline, "pod/app"}
			if tt.at != "" {
				args = append(args, "--at", tt.at)
			}
			e := start(tmp, args...)
			Eventually(e, time.Minute).Should(gexec.Exit(0))
			Expect(string(e.Out.Contents())).To(ContainSubstring(tt.want), "--at %q", tt.at)
			Expect(string(e.Out.Contents())).NotTo(ContainSubstring("connection is closing"))
		}
		e := start(tmp, "explain", "--trace", timeline, "--at", "2m", "pod/app")
		Eventually(e, time.Minute).Should(gexec.Exit(2))
		Expect(string(e.Err.Contents())).To(ContainSubstring("--at 2m0s: the run's steps ended at +1m0s"))
		e = start(tmp, "explain", "--at", "30s", "pod/app")
		Eventually(e, time.Minute).Should(gexec.Exit(2))
		Expect(string(e.Err.Contents())).To(ContainSubstring("--at needs --trace"))
		expectNothingLeftIn(tmp)
	})
})
