package csisimtest

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/fault"
)

// TestNodeLossAndForceDelete is the node-loss story through the Go API: a
// lost node turns NotReady and tainted unreachable, a pod deleted there
// stays terminating (no kubelet finishes it) until it is force-deleted,
// and the claim it used waits for it.
func TestNodeLossAndForceDelete(t *testing.T) {
	c := Start(t, Options{Seed: 7})
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0].(*corev1.PersistentVolumeClaim), objs[1].(*corev1.Pod)
	c.Eventually(pod).Should(BeRunning())

	node := c.Node("node-1")
	c.Expect(node).To(BeReady())
	c.InjectFault(fault.Fault{Kind: fault.NodeLoss, Node: "node-1"})
	c.Eventually(node).Should(BeNotReady())
	c.Eventually(node).Should(HaveTaint("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute))
	c.Expect(node).To(HaveTaint("node.kubernetes.io/unreachable"))
	wantAll(t, mismatch(t, c, node, BeReady()),
		"Expected Node node-1 to be Ready, but it is NotReady: its Ready condition is Unknown (NodeStatusUnknown: Kubelet stopped posting node status.) since ",
		"its taints are node.kubernetes.io/unreachable:NoSchedule, node.kubernetes.io/unreachable:NoExecute")
	wantAll(t, mismatch(t, c, node, HaveTaint("node.kubernetes.io/unreachable", corev1.TaintEffectPreferNoSchedule)),
		"to have the taint node.kubernetes.io/unreachable:PreferNoSchedule, but its taints are node.kubernetes.io/unreachable:NoSchedule")

	c.Delete(pod, pvc)
	// Gomega's own matchers get the typed object Apply returned, read afresh.
	c.Eventually(pod).Should(gomega.HaveField("ObjectMeta.DeletionTimestamp", gomega.Not(gomega.BeNil())))
	c.Consistently(pod).WithTimeout(2 * time.Minute).Should(BeTerminating())
	c.Expect(pvc).To(BeTerminating())
	wantAll(t, mismatch(t, c, pvc, BeGone()),
		"to be gone, but it still exists, terminating since ", "held by finalizers kubernetes.io/pvc-protection")
	cc, ft := failing(t, c)
	if cc.Expect(pod).NotTo(BeTerminating()) {
		t.Fatal("NotTo(BeTerminating()) held on a pod deleted on a lost node")
	}
	wantAll(t, strings.Join(ft.fatal, "\n"), "Expected Pod default/app not to be terminating, but it is terminating since ", "(grace period 30s)")

	c.ForceDelete(pod)
	c.Expect(pod).To(BeGone())
	// The claim was held only for the pod.
	c.Eventually(pvc).Should(BeGone())

	cc, ft = failing(t, c)
	cc.ForceDelete(pod)
	wantAll(t, strings.Join(ft.fatal, "\n"), "csisimtest: ForceDelete Pod default/app: it does not exist")
}
