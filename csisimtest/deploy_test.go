package csisimtest

import (
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deployDir is the library's own deployment of csisim's driver (its node
// DaemonSet lacks the Exists toleration, which matters only on a tainted
// node).
const deployDir = "../scenarios/library/deploy-without-exists-toleration"

// TestDeploy starts csisim's driver from its deployment manifests: the
// cluster's StorageClass is the manifests' (Start makes none from the
// profile), every node's CSINode lists the driver once the DaemonSet's
// pod there runs, and a claim of the default class is mounted.
func TestDeploy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("csisim's driver mounts: needs root")
	}
	c := Start(t, Options{Driver: "csisim", Seed: 7, Nodes: 2, Deploy: deployDir})
	objs := c.Apply(claimAndPod)
	pvc, pod := objs[0], objs[1]
	c.Eventually(pod).Should(BeRunning())
	sc, err := c.Client().StorageV1().StorageClasses().Get(t.Context(), c.StorageClassName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Labels["app.kubernetes.io/part-of"] != "csisim" {
		t.Errorf("StorageClass %s has labels %v: not the manifests' (11-storageclass.yaml labels it part-of csisim)", sc.Name, sc.Labels)
	}
	for _, node := range c.Nodes() {
		csiNode, err := c.Client().StorageV1().CSINodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(csiNode.Spec.Drivers) != 1 || csiNode.Spec.Drivers[0].Name != c.DriverName() {
			t.Errorf("CSINode %s lists %v, want the driver %s the DaemonSet placed there", node, csiNode.Spec.Drivers, c.DriverName())
		}
	}
	c.Delete(pod, pvc)
	c.Eventually(pvc).Should(BeGone())
	c.Expect(c).To(HaveNoInvariantViolations())
}

// A deployment no image of the profile stands for is refused at start,
// naming why.
func TestDeployRefusesTheInProcessMock(t *testing.T) {
	ft := &fakeTB{T: t}
	_, err := start(ft, Options{Driver: "mock", Deploy: deployDir})
	if err == nil || !strings.Contains(err.Error(), "maps no image") {
		t.Fatalf("start: error %v, want one saying the mock profile maps no image", err)
	}
}
