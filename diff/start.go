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

// Where each run starts. The real cluster runs the scenario once every
// node has joined and the node lifecycle controller has registered it (its
// RegisteredNode event, on the controller's 5-second monitor period), as a
// cluster that people use is long past that point; otherwise it would show
// RegisteredNode after whichever step its monitor period happened to fall
// in. The simulator runs the scenario from its start, as `csisim run`
// does: waiting for its first monitor period, 5 s of virtual time, would
// shift every periodic timer of the simulation (the PV controller's 15-s
// resync, a kubelet's 10-s status sync) against the scenario's steps, and
// a scenario that waits for one of them (api-conflict-pv-binder) would no
// longer run as written. So the simulator registers its nodes 5 s into the
// scenario; timing.go knows that difference for what it is.

// reasonRegisteredNode is the node lifecycle controller's event for a
// node it sees for the first time.
const reasonRegisteredNode = "RegisteredNode"

// registerTimeout bounds the wait for the start point: two monitor
// periods and then some.
const registerTimeout = 30 * time.Second

// pollRegistered is how often a real cluster is looked at for the start
// point.
const pollRegistered = 200 * time.Millisecond

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
		case <-time.After(pollRegistered):
		}
	}
}
