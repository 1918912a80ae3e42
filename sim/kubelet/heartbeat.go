package kubelet

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's heartbeats, with the real defaults: it renews its Lease in
// kube-node-lease every 10 s (a quarter of the 40 s lease), which is what
// the node lifecycle controller watches, and posts its Ready condition.
const (
	LeaseDurationSeconds = 40
	HeartbeatInterval    = 10 * time.Second
	leaseNamespace       = corev1.NamespaceNodeLease
)

// Heartbeat renews the node's Lease, creating it owned by the Node the
// first time, as the real kubelet does.
func (k *Kubelet) Heartbeat(ctx context.Context) {
	if err := k.renewLease(ctx); err != nil {
		k.events.Eventf(&corev1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName, UID: "", APIVersion: "v1"},
			corev1.EventTypeWarning, "LeaseRenewFailed", "%v", err)
	}
}

func (k *Kubelet) renewLease(ctx context.Context) error {
	now := metav1.NewMicroTime(k.clock.Now())
	leases := k.client.CoordinationV1().Leases(leaseNamespace)
	lease, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", k.cfg.NodeName, err)
		}
		holder, duration := k.cfg.NodeName, int32(LeaseDurationSeconds)
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: leaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
