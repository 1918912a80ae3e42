package apifaults

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
)

// OutOfService adds the node.kubernetes.io/out-of-service:NoExecute
// taint to node, as an administrator does with
//
//	kubectl taint nodes NODE node.kubernetes.io/out-of-service=nodeshutdown:NoExecute
//
// once they know the node is down for good (the non-graceful node shutdown).
// It does nothing when the taint is there already. now stamps the taint's
// timeAdded, as the API server does, to the second.
func OutOfService(ctx context.Context, cs kubernetes.Interface, node string, now time.Time) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("tainting node %s out of service: %w", node, err)
	}
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService }) {
		return nil
	}
	n.Spec.Taints = append(n.Spec.Taints, fault.OutOfServiceTaint(now))
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("tainting node %s out of service: %w", node, err)
	}
	return nil
}
