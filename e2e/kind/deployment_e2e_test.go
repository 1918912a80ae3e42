//go:build e2e

package kind_test

// On the cluster e2e/kind/run.sh made: the driver is registered on every
// node, with the node's zone (none: cluster.yaml says why). Skipped on other clusters (make e2e).

import (
	"context"
	"flag"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csisim/csisim/deploy"
	"github.com/csisim/csisim/drivers/hostpath"
)

var kubeconfig = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the kind cluster")

func TestDriverRegisteredOnEveryNode(t *testing.T) {
	if os.Getenv("CSISIM_KIND_CLUSTER") == "" {
		t.Skip("CSISIM_KIND_CLUSTER is not set: not a cluster made by e2e/kind/run.sh")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Errorf("%d nodes, want 3 (cluster.yaml: a control plane and two workers)", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		csiNode, err := client.StorageV1().CSINodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("node %s: CSINode: %v", n.Name, err)
			continue
		}
		i := slices.IndexFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == deploy.DriverName })
		if i < 0 {
			t.Errorf("node %s: %s is not registered with kubelet (CSINode drivers: %v)", n.Name, deploy.DriverName, csiNode.Spec.Drivers)
			continue
		}
		d := csiNode.Spec.Drivers[i]
		if d.NodeID != n.Name {
			t.Errorf("node %s: driver node ID %q, want the node name (downward API spec.nodeName)", n.Name, d.NodeID)
		}
		if !slices.Contains(d.TopologyKeys, hostpath.TopologyKeyNode) {
			t.Errorf("node %s: topology keys %v lack %s", n.Name, d.TopologyKeys, hostpath.TopologyKeyNode)
		}
		// The zone travels node label -> pod label (PodTopologyLabels
		// admission) -> --zone -> NodeGetInfo -> node label of the driver.
		zone := n.Labels[corev1.LabelTopologyZone]
		if got := n.Labels[hostpath.TopologyKeyZone]; got != zone {
			t.Errorf("node %s: %s=%q, want the node's zone %q", n.Name, hostpath.TopologyKeyZone, got, zone)
		}
	}
}
