package provisioner

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/clock"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// What the sidecar does after a failed provisioning attempt. Every failure
// is reported as a ProvisioningFailed event on the claim with the error as
// its message, and the claim is tried again with the sidecar's exponential
// backoff (1 s doubling to 5 min), except:
//
//   - a CreateVolume that failed with ResourceExhausted for a claim whose
//     node the scheduler selected, on a driver with topology: the volume may
//     fit elsewhere, so the provisioner removes the selected-node annotation
//     and stops; the scheduler picks a node again.
//   - a CreateVolume that failed with InvalidArgument is infeasible: the
//     event says so and the claim is not tried again for
//     RetryIntervalMax, unless its class changes (a new class UID).

// rescheduleAfter reports whether a failed CreateVolume should give the
// claim back to the scheduler.
func rescheduleAfter(err error, topology bool, claim *corev1.PersistentVolumeClaim) bool {
	if !topology || claim.Annotations[storagehelpers.AnnSelectedNode] == "" {
		return false
	}
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted
}

// infeasible reports whether a CreateVolume error says the request can
// never succeed as it is.
func infeasible(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.InvalidArgument
}

// slowRetries remembers the claims whose last attempt was infeasible.
type slowRetries struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	since map[types.UID]slowRetry
}

type slowRetry struct {
	at    time.Time
	class types.UID
}

func newSlowRetries(clk clock.PassiveClock) *slowRetries {
	return &slowRetries{clock: clk, since: map[types.UID]slowRetry{}}
}

func (s *slowRetries) mark(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since[claim.UID] = slowRetry{at: s.clock.Now(), class: class.UID}
}

// delayed returns an error while the claim must not be tried: less than
// RetryIntervalMax after an infeasible attempt with the same class.
func (s *slowRetries) delayed(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.since[claim.UID]
	if !ok {
		return nil
	}
	if r.class != class.UID || s.clock.Since(r.at) >= RetryIntervalMax {
		delete(s.since, claim.UID)
		return nil
	}
	return fmt.Errorf("skipping volume provisioning for pvc %s, because provisioning previously failed with infeasible error", claim.UID)
}

// reschedule removes the scheduler's node choice from the claim.
func (p *Provisioner) reschedule(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := p.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := cur.Annotations[storagehelpers.AnnSelectedNode]; !ok {
			return nil
		}
		delete(cur.Annotations, storagehelpers.AnnSelectedNode)
		_, err = p.client.CoreV1().PersistentVolumeClaims(cur.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("delete annotation 'annSelectedNode' for PersistentVolumeClaim %q: %v", claim.Namespace+"/"+claim.Name, err)
	}
	return nil
}
