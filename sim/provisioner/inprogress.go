package provisioner

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/csisim/csisim/sim/volumeutil"
)

// Claims in progress. A CreateVolume that timed out or was cut off may
// still be making the volume in the driver, so the real sidecar keeps the
// claim "in progress" and calls CreateVolume again — the driver's
// idempotence turns the retry into the answer to the first call — until it
// gets a final answer, even after the claim is deleted: it then provisions
// for the claim it remembers, the PV controller finds the PV's claim gone
// and releases it, and the volume is deleted through DeleteVolume. Without
// this, a claim deleted during a slow CreateVolume leaks the volume
// (external-provisioner #131, #311).
//
// The sidecar queues claims by UID, so that it can find the one it
// remembers when the informer no longer has it
// (sig-storage-lib-external-provisioner controller/controller.go,
// syncClaimHandler and syncClaim).

// provisioningState says what a failed attempt leaves behind in the driver,
// as the library's ProvisioningState (controller/volume.go).
type provisioningState int

const (
	// stateNoChange: the attempt failed before CreateVolume; whether a
	// volume is being made is what it was before.
	stateNoChange provisioningState = iota
	// stateFinished: the driver answered, and nothing is in progress.
	stateFinished
	// stateInBackground: CreateVolume may still be at work in the driver.
	stateInBackground
)

// createVolumeError is an error CreateVolume answered, or the error of the
// call itself: only such an error can leave a volume being made. Its text
// is the error's own, as the sidecar's event shows it.
type createVolumeError struct{ err error }

func (e createVolumeError) Error() string { return e.err.Error() }
func (e createVolumeError) Unwrap() error { return e.err }

// stateAfter is what a failed attempt leaves behind: the external-
// provisioner's checkError (pkg/controller/controller.go) for CreateVolume
// errors — a timeout, a cancelled or cut-off call, Aborted ("operation
// pending") or an error that is no gRPC status may still be at work; every
// other code is final — and no change for failures before the call.
func stateAfter(err error) provisioningState {
	var cv createVolumeError
	if !errors.As(err, &cv) {
		return stateNoChange
	}
	st, ok := status.FromError(cv.err)
	if !ok {
		return stateInBackground
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Aborted:
		return stateInBackground
	}
	return stateFinished
}

// claimsInProgress are the claims whose CreateVolume may still be at work,
// by UID, as they were when it was last called.
type claimsInProgress struct {
	mu     sync.Mutex
	claims map[string]*corev1.PersistentVolumeClaim
}

func (c *claimsInProgress) load(uid string) *corev1.PersistentVolumeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[uid]
}

// settle records the outcome of an attempt on claim as the library's
// syncClaim and processNextClaimWorkItem do: success, a final error or a
// claim not to provision drops it; a temporary error keeps it; a failure
// before CreateVolume changes nothing.
func (c *claimsInProgress) settle(ctx context.Context, claim *corev1.PersistentVolumeClaim, state provisioningState, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	logger := klog.FromContext(ctx)
	switch {
	case err == nil:
		delete(c.claims, string(claim.UID))
	case state == stateFinished:
		// Log wording: sig-storage-lib-external-provisioner controller/controller.go.
		logger.V(2).Info("Final error received, removing PVC from claims in progress", "claimUID", claim.UID)
		delete(c.claims, string(claim.UID))
	case state == stateInBackground:
		logger.V(2).Info("Temporary error received, adding PVC to claims in progress", "claimUID", claim.UID)
		if c.claims == nil {
			c.claims = map[string]*corev1.PersistentVolumeClaim{}
		}
		c.claims[string(claim.UID)] = claim
	}
}

// claimHandler queues a claim by its UID. A deleted claim is not queued:
// if it is in progress it is in the queue already, else nothing is owed
// to it (the library's claim handler).
func (p *Provisioner) claimHandler() cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			p.claimQ.Add(string(claim.UID))
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
}

// syncClaim provisions for the claim with UID key: the informer's, or, once
// it is gone, the one remembered in progress.
func (p *Provisioner) syncClaim(ctx context.Context, key string) error {
	claims, err := volumeutil.ByIndex[*corev1.PersistentVolumeClaim](p.claimIndex, volumeutil.ClaimsByUID, key)
	if err != nil {
		return err
	}
	var claim *corev1.PersistentVolumeClaim
	if len(claims) > 0 {
		claim = claims[0]
	} else if claim = p.inProgress.load(key); claim == nil {
		// The library reports this through HandleError; here it is
		// logged quietly, since it is routine in a run.
		klog.FromContext(ctx).V(4).Info(fmt.Sprintf("claim %q in work queue no longer exists", key))
		return nil
	}
	state, err := p.syncClaimObject(ctx, claim)
	p.inProgress.settle(ctx, claim, state, err)
	return err
}
