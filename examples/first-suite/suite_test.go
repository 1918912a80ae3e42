// Package firstsuite_test is a first Ginkgo suite with csisim's Go API:
// copy it into a driver repository (its go.mod pointing at csisim, as
// docs/go-api.md shows), run `go test ./...` (or `ginkgo -p`),
// then point Driver at the driver's own profile file.
package firstsuite_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/csisimtest"
	"github.com/csisim/csisim/fault"
)

func TestFirstSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "First csisim suite")
}

// claimAndPod is a claim of the driver's default StorageClass and a pod
// that mounts it.
const claimAndPod = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`

var _ = Describe("a volume", func() {
	var (
		c   *csisimtest.Cluster
		pvc *corev1.PersistentVolumeClaim
		pod *corev1.Pod
	)

	BeforeEach(func() {
		// A cluster of its own for each spec, on a virtual clock. No Driver:
		// csisim's in-memory mock driver; a driver repository names its
		// profile file, or a shipped profile ("csi-test-mock").
		c = csisimtest.Start(GinkgoT(), csisimtest.Options{Seed: 1})
		objs := c.Apply(claimAndPod)
		pvc, pod = objs[0].(*corev1.PersistentVolumeClaim), objs[1].(*corev1.Pod)
	})

	It("is provisioned and mounted, and survives a failing NodeStageVolume", func() {
		c.InjectFault(fault.Fault{Kind: fault.CSIError, CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Unavailable}})
		c.Eventually(pvc).Should(csisimtest.BeBound())
		// Two minutes of virtual time, a few milliseconds of yours.
		c.Consistently(pod).WithTimeout(2 * time.Minute).ShouldNot(csisimtest.BeRunning())
		c.Expect(pod).To(csisimtest.HaveEvent("FailedMount", "injected"))

		c.InjectFault(fault.Fault{Kind: fault.CSIHeal, CSI: fault.CSI{Method: "NodeStageVolume"}})
		c.Eventually(pod).Should(csisimtest.BeRunning())
		c.Refresh(pvc)
		Expect(pvc.Spec.VolumeName).To(HavePrefix("pvc-"))
		// The failed stages were retried (with backoff) until one succeeded.
		c.Expect(pvc).To(csisimtest.ContainCSICalls("CreateVolume", "ControllerPublishVolume",
			"NodeStageVolume", "NodeStageVolume", "NodePublishVolume"))

		c.Delete(pod, pvc)
		c.Eventually(pvc).Should(csisimtest.BeGone())
		// Its volume goes after it: wait for the driver to be told.
		c.Eventually(pvc).Should(csisimtest.ContainCSICalls("NodeUnpublishVolume", "NodeUnstageVolume",
			"ControllerUnpublishVolume", "DeleteVolume"))
		c.Expect(c).To(csisimtest.HaveNoInvariantViolations())
	})

	It("keeps a pod of a lost node terminating until it is force-deleted", func() {
		c.Eventually(pod).Should(csisimtest.BeRunning())
		c.InjectFault(fault.Fault{Kind: fault.NodeLoss, Node: "node-1"})
		node := c.Node("node-1")
		c.Eventually(node).Should(csisimtest.BeNotReady())
		c.Eventually(node).Should(csisimtest.HaveTaint("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute))

		c.Delete(pod)
		// No kubelet to stop it: it stays, as kubectl shows it, Terminating.
		c.Consistently(pod).WithTimeout(5 * time.Minute).Should(csisimtest.BeTerminating())
		// Gomega's own matchers work on the typed objects too.
		c.Expect(pod).To(HaveField("ObjectMeta.DeletionTimestamp", Not(BeNil())))

		c.ForceDelete(pod) // kubectl delete --force --grace-period=0
		c.Eventually(pod).Should(csisimtest.BeGone())
	})
})
