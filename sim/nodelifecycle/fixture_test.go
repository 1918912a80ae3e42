package nodelifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// readyNode is node-a as its kubelet last reported it at heartbeat:
// Ready, with the TTL annotation the TTL controller sets.
func readyNode(heartbeat time.Time) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a",
		Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "0"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(heartbeat)}}}}
}

// nodeLease is node-a's Lease at resourceVersion rv, last renewed at renewed.
func nodeLease(rv string, renewed metav1.MicroTime) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: corev1.NamespaceNodeLease, ResourceVersion: rv},
		Spec: coordinationv1.LeaseSpec{RenewTime: &renewed}}
}

// syncedReady stores node in the API server and in the informer, the
// Lease cached as cached in the informer and the one stored as stored in
// the API server, syncs node-a once and returns its Ready status as the
// API server then has it.
func syncedReady(t *testing.T, c *Controller, client *fake.Clientset, factory informers.SharedInformerFactory,
	node *corev1.Node, cached, stored *coordinationv1.Lease) corev1.ConditionStatus {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, stored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(node); err != nil {
		t.Fatal(err)
	}
	if err := factory.Coordination().V1().Leases().Informer().GetIndexer().Add(cached); err != nil {
		t.Fatal(err)
	}
	if err := c.syncNode(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ready(got)
}

// nodeWrites are the Nodes the client's updates wrote, in order, and
// their taints as "key:effect, ...", one string a write.
func nodeWrites(client *fake.Clientset) (taints []string, nodes []*corev1.Node) {
	for _, a := range client.Actions() {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok {
			continue
		}
		node := u.GetObject().(*corev1.Node)
		var keys []string
		for _, t := range node.Spec.Taints {
			keys = append(keys, t.Key+":"+string(t.Effect))
		}
		taints = append(taints, strings.Join(keys, ", "))
		nodes = append(nodes, node)
	}
	return taints, nodes
}
