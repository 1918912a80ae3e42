package driversuite_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	"github.com/csisim/csisim/csisimtest"
	"github.com/csisim/csisim/fault"
)

// driver is the driver under test: a shipped profile's name, or a profile
// file such as "deploy/csisim-profile.yaml" in a driver's own repository.
const driver = "csi-test-mock"

// claimAndPod is a claim of the driver's default StorageClass and a pod
// that mounts it.
const claimAndPod = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
  - name: app
    image: busybox
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`

var _ = Describe("a volume of the driver", func() {
	var c *csisimtest.Cluster

	BeforeEach(func() {
		// Each spec its own cluster: its own directory, driver process and
		// virtual clock, removed when the spec ends.
		c = csisimtest.Start(GinkgoT(), csisimtest.Options{Driver: driver, Seed: uint64(GinkgoRandomSeed())})
	})

	AfterEach(func() {
		// Whatever a spec did, the run must keep csisim's invariants: no
		// volume on two nodes, no pod running without its volume, CSI
		// calls in CSI's order, nothing left mounted or attached.
		c.Expect(c).To(csisimtest.HaveNoInvariantViolations())
	})

	It("is provisioned, attached, staged and published for a pod", func() {
		objs := c.Apply(claimAndPod)
		pvc, pod := objs[0], objs[1]

		c.Eventually(pvc).Should(csisimtest.BeBound())
		c.Expect(pvc).To(csisimtest.HaveEvent("ProvisioningSucceeded"))
		c.Eventually(pod).Should(csisimtest.BeRunning())
		c.Expect(pvc).To(csisimtest.HaveCSICalls("CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
	})

	It("recovers when NodeStageVolume fails for a while", func() {
		c.InjectFault(fault.Fault{Kind: fault.CSIError,
			CSI: fault.CSI{Method: "NodeStageVolume", Code: codes.Unavailable, Message: "backend not reachable"}})
		objs := c.Apply(claimAndPod)
		pvc, pod := objs[0], objs[1]

		c.Eventually(pvc).Should(csisimtest.BeBound())
		// Two virtual minutes without the stage succeeding: the pod must
		// not run, and its events must say why.
		c.Consistently(pod).WithTimeout(2 * time.Minute).ShouldNot(csisimtest.BeRunning())
		c.Expect(pod).To(csisimtest.HaveEvent("FailedMount", "backend not reachable"))

		c.InjectFault(fault.Fault{Kind: fault.CSIHeal, CSI: fault.CSI{Method: "NodeStageVolume"}})
		c.Eventually(pod).Should(csisimtest.BeRunning())
		c.Expect(pvc).To(csisimtest.ContainCSICalls("NodeStageVolume", "NodeStageVolume", "NodePublishVolume"))
	})

	It("is unpublished, unstaged, detached and deleted with its pod and claim", func() {
		objs := c.Apply(claimAndPod)
		pvc, pod := objs[0], objs[1]
		c.Eventually(pod).Should(csisimtest.BeRunning())

		c.Delete(pod)
		c.Eventually(pod).Should(csisimtest.BeGone())
		c.Delete(pvc)
		c.Eventually(pvc).Should(csisimtest.BeGone())
		c.Eventually(pvc).Should(csisimtest.HaveCSICalls("CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
			"NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume", "DeleteVolume"))
	})
})
