package nodelifecycle

import (
	"context"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The monitor reports a node when it first sees it and when it is gone, in
// the real controller's words.
func TestMonitorRegistersAndRemovesNodes(t *testing.T) {
	c, client, factory, _ := newTestController()
	ctx := context.Background()
	nodes := factory.Core().V1().Nodes().Informer().GetIndexer()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}}
	if err := nodes.Add(node); err != nil {
		t.Fatal(err)
	}
	events := func() string {
		list, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Reason+" "+string(e.InvolvedObject.UID)+": "+e.Message)
		}
		sort.Strings(out) // "RegisteredNode" before "RemovingNode"
		return strings.Join(out, "; ")
	}

	c.Monitor(ctx)
	c.Monitor(ctx) // seen already: no second report
	if got, want := events(), "RegisteredNode uid-a: Node node-a event: Registered Node node-a in Controller"; got != want {
		t.Errorf("after registering: events %q, want %q", got, want)
	}
	if err := nodes.Delete(node); err != nil {
		t.Fatal(err)
	}
	c.Monitor(ctx)
	c.Monitor(ctx)
	if got, want := events(), "RegisteredNode uid-a: Node node-a event: Registered Node node-a in Controller; "+
		"RemovingNode uid-a: Node node-a event: Removing Node node-a from Controller"; got != want {
		t.Errorf("after the node went: events %q, want %q", got, want)
	}
}
