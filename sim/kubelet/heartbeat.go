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
// first time, and posts the Ready condition again if the node lifecycle
// controller has marked it otherwise, as the real kubelet does. A stopped
// kubelet does nothing.
func (k *Kubelet) Heartbeat(ctx context.Context) {
	if k.Stopped() {
		return
	}
	if err := k.postReady(ctx); err != nil {
		k.events.Eventf(&corev1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName, APIVersion: "v1"},
			corev1.EventTypeWarning, "NodeStatusUpdateFailed", "%v", err)
	}
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

// postReady sets the node's Ready condition True if it is not.
func (k *Kubelet) postReady(ctx context.Context) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.NewTime(k.clock.Now()).Rfc3339Copy()
	for i, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return nil
		}
		node.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
		_, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	}
	return nil
}

// Stop makes the kubelet stop working, as when its node is lost: no
// heartbeats; the cluster also stops running its volume manager.
func (k *Kubelet) Stop(stopped bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = stopped
}

// Stopped reports whether Stop(true) was called last.
func (k *Kubelet) Stopped() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stopped
}
