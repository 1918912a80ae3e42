package diff

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Both clusters are compared from the same point of their lives: every
// node has joined and the node lifecycle controller has registered it
// (its RegisteredNode event), which the real controller does on its
// 5-second monitor period. A real cluster reaches that point some seconds
// after its nodes join; the simulator at its first monitor period, 5 s of
// virtual time after it starts. A scenario run against a cluster that
// people use starts long after it. Without this, the real cluster
// shows RegisteredNode after whichever step its monitor period happened to
// fall in, and the simulator, whose steps take no virtual time, none.

// reasonRegisteredNode is the node lifecycle controller's event for a
// node it sees for the first time.
const reasonRegisteredNode = "RegisteredNode"

// registerTimeout bounds the wait for the start point: two monitor
// periods and then some.
const registerTimeout = 30 * time.Second

// nodesRegistered reports whether every node has its RegisteredNode event.
func nodesRegistered(ctx context.Context, cs kubernetes.Interface, nodes []string) (bool, error) {
	events, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing events: %w", err)
	}
	return registered(events.Items, nodes), nil
}

// registered reports whether events hold a RegisteredNode event for each
// of nodes.
func registered(events []corev1.Event, nodes []string) bool {
	seen := map[string]bool{}
	for _, e := range events {
		if e.Reason == reasonRegisteredNode && e.InvolvedObject.Kind == "Node" {
			seen[e.InvolvedObject.Name] = true
		}
	}
	return !slices.ContainsFunc(nodes, func(n string) bool { return !seen[n] })
}

// waitRegistered polls a real cluster until its nodes are registered.
func waitRegistered(ctx context.Context, cs kubernetes.Interface, nodes []string) error {
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	for {
		ok, err := nodesRegistered(ctx, cs, nodes)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the node lifecycle controller to register nodes %v: %w (last error: %v)", nodes, ctx.Err(), err)
		case <-time.After(pollSettle):
		}
	}
}
