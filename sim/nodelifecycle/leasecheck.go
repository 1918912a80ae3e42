package nodelifecycle

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
)

// leaseResource is what the lease check compares versions of.
var leaseResource = coordinationv1.SchemeGroupVersion.WithResource("leases").GroupResource()

// The lease circuit breaker of v1.37's node lifecycle controller
// (NodeControllerLeaseCircuitBreaker, beta and on by default; KEP 5328;
// pkg/controller/nodelifecycle/node_lifecycle_controller.go
// tryUpdateNodeHealth). Before it declares a node's heartbeat lost from
// its Lease informer, the controller reads the Lease from the API server;
// if that one is newer than what the informer showed, the informer is
// behind (after an API server outage, until its reflector lists again):
// the controller notes the live version and judges no node until the
// informer has caught up with it. A node skipped so is neither marked
// Unknown nor tainted nor evicted in that pass — "Update health of Node
// from Controller error, Skipping - no pods will be evicted". Its
// consistency store is the real one, over the Lease informer's store.

// leasesReady says whether the Lease informer has caught up with the
// newest Lease version the controller read from the API server.
func (c *Controller) leasesReady(node *corev1.Node) bool {
	if err := c.consistency().EnsureReady(types.NamespacedName{}); err != nil {
		c.skipped(node, err)
		return false
	}
	return true
}

// heartbeatReallyLost is the check made when the informer's Lease of the
// node is past the grace period: false (the node skipped this pass) when
// the API server's Lease is another version than the informer's, or
// cannot be read.
func (c *Controller) heartbeatReallyLost(ctx context.Context, node *corev1.Node) bool {
	var seen string
	if lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil {
		seen = lease.ResourceVersion
	}
	live, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		c.skipped(node, err)
		return false
	case live.ResourceVersion != seen:
		c.consistency().WroteAt(types.NamespacedName{}, "", leaseResource, live.ResourceVersion)
		c.skipped(node, &consistency.ConsistencyError{ReadRV: seen, WroteRV: live.ResourceVersion, GroupResource: leaseResource})
		return false
	}
	return true
}

func (c *Controller) skipped(node *corev1.Node, err error) {
	// The real controller logs it as an error; here it goes to the
	// verbose log, not to the run's terminal.
	klog.Background().V(2).Info("Update health of Node from Controller error, Skipping - no pods will be evicted", "err", err, "node", klog.KObj(node))
}

// consistency is the controller's consistency store, which a restart
// makes anew.
func (c *Controller) consistency() consistency.ConsistencyStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaseVersions
}

// newLeaseVersions is the store a (re)started controller begins with.
func (c *Controller) newLeaseVersions() consistency.ConsistencyStore {
	return consistency.NewConsistencyStore(map[schema.GroupResource]consistency.LastSyncRVGetter{leaseResource: c.leaseStore})
}
