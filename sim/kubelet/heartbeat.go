package kubelet

// The node's heartbeats and status — models kubernetes
// pkg/kubelet/kubelet_node_status.go (updateNodeStatus, with
// setNodeVolumesInUseStatus) and the node's Lease, which the kubelet renews
// with k8s.io/component-helpers/apimachinery/lease.

import (
	"context"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/timing"
)

// The kubelet's heartbeats, with the real defaults: it renews its Lease in
// kube-node-lease every 10 s (a quarter of the 40 s lease), which is what
// the node lifecycle controller watches, and posts its Ready condition.
//
// Its node status it posts when it changes and, unchanged, every
// NodeStatusReportFrequency (--node-status-report-frequency, 5 min): that
// periodic update is also what tells the attach/detach controller, after
// it restarts, which volumes the node still uses.
//
// A scenario's cluster.timing divides them all (Config.Timing).
const (
	LeaseDurationSeconds      = timing.DefaultNodeLeaseDurationSeconds
	HeartbeatInterval         = timing.DefaultNodeStatusUpdateFrequency
	NodeStatusReportFrequency = timing.DefaultNodeStatusReportFrequency
	leaseNamespace            = corev1.NamespaceNodeLease
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
		holder, duration := k.cfg.NodeName, k.cfg.Timing.NodeLeaseDurationSeconds()
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

// healthyConditions are the conditions a healthy kubelet posts, in the
// order and words of the real one: no memory, disk or PID pressure, and
// Ready. (The node lifecycle controller marks them all Unknown when the
// kubelet stops posting; ones a kubelet never posted it would report as
// NodeStatusNeverUpdated.)
func healthyConditions(now metav1.Time) []corev1.NodeCondition {
	cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// postReady posts the healthy conditions again when the node lifecycle
// controller has marked any of them otherwise (Unknown, after the node was
// lost); conditions that did not change keep their transition times. When
// nothing changed for NodeStatusReportFrequency it posts the status anyway,
// with new heartbeat times.
func (k *Kubelet) postReady(ctx context.Context) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.NewTime(k.clock.Now()).Rfc3339Copy()
	want := healthyConditions(now)
	k.mu.Lock()
	// A kubelet that has not posted its status yet (one that found its
	// Node there when it started) posts it now.
	changed := k.lastStatusReport.IsZero() || now.Sub(k.lastStatusReport) >= k.cfg.Timing.NodeStatusReportFrequency()
	k.mu.Unlock()
	if changed {
		for i := range node.Status.Conditions {
			node.Status.Conditions[i].LastHeartbeatTime = now
		}
	}
	for _, w := range want {
		i := slices.IndexFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == w.Type })
		switch {
		case i < 0:
			node.Status.Conditions = append(node.Status.Conditions, w)
		case node.Status.Conditions[i].Status != w.Status:
			node.Status.Conditions[i] = w
		default:
			continue
		}
		changed = true
	}
	// volumesInUse is part of the status sync too, as in the real
	// kubelet's setNodeVolumesInUseStatus: a volume a pod starts to use is
	// reported at the next sync, and only then mounted (setUp); one no pod
	// uses any more leaves at the next sync, and only then may the
	// attach/detach controller detach it.
	inUse := k.volumesInUse()
	reported := slices.Clone(node.Status.VolumesInUse)
	slices.Sort(reported)
	if !slices.Equal(inUse, reported) {
		node.Status.VolumesInUse = inUse
		changed = true
	}
	if changed {
		if _, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		k.statusReported()
	}
	if k.desired.markReportedInUse(inUse) {
		// Pods waiting for the report may go on (wake.go). The Node's own
		// update may have woken them already, before inUse was set: with
		// goroutines, against a real API server, its event can come first.
		k.enqueuePending()
	}
	return nil
}

// statusReported notes that the kubelet has just posted its node status.
func (k *Kubelet) statusReported() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastStatusReport = k.clock.Now()
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
