package attachdetach

import (
	"context"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReconcilerSyncPeriod is how often the real controller's reconciler
// verifies that the volumes it believes attached still are: its
// syncDuration, kube-controller-manager's
// --attach-detach-reconcile-sync-period, default 1 minute
// (ReconcilerSyncLoopPeriod, kubernetes
// pkg/controller/volume/attachdetach/config/v1alpha1/defaults.go).
const ReconcilerSyncPeriod = time.Minute

// SyncStates is the reconciler's periodic sync (syncStates, kubernetes
// pkg/controller/volume/attachdetach/reconciler/reconciler.go): every
// attachment the controller holds as attached is checked as the CSI
// attacher's VolumesAreAttached checks it (kubernetes
// pkg/volume/csi/csi_attacher.go) — its VolumeAttachment, from the
// informer's cache, else from the API server, must exist and say
// attached. One that does not is marked detached (MarkVolumeAsDetached):
// it leaves the controller's memory and the node's volumesAttached, and
// nothing is detached for it; a pod waiting for the volume elsewhere
// (Multi-Attach) is then attached on its next reconcile. So a
// VolumeAttachment deleted by hand is noticed within a sync period,
// without the six-minute wait of a force detach. It posts no event.
//
// The cluster runs it every ReconcilerSyncPeriod from its start. (The real
// reconciler syncs when a period has passed since its last sync, looking
// every 100 ms, and starts counting again when kube-controller-manager
// restarts; a restarted simulated controller keeps the cluster's phase.)
func (c *Controller) SyncStates(ctx context.Context) {
	c.populate()
	c.mu.Lock()
	var check []*attachment
	for _, a := range c.actual {
		if a.confirmed {
			check = append(check, a)
		}
	}
	c.mu.Unlock()
	sort.Slice(check, func(i, j int) bool { return check[i].name < check[j].name })
	changed := false
	for _, a := range check {
		if c.stillAttached(ctx, a.name) {
			continue
		}
		c.mu.Lock()
		if c.actual[a.name] == a {
			c.removeActual(a)
			changed = true
		}
		c.mu.Unlock()
	}
	if !changed {
		return
	}
	// The real reconciler looks at every node's desired and actual
	// volumes on its next pass (every 100 ms): the node whose status
	// drops the volume, and those whose pods may now attach it.
	for _, n := range c.allNodeNames() {
		c.queue.Add(n)
	}
}

// stillAttached reads the VolumeAttachment's status.attached, from the
// cache or, if it is not there, from the API server.
func (c *Controller) stillAttached(ctx context.Context, name string) bool {
	va, err := c.vas.Get(name)
	if apierrors.IsNotFound(err) {
		va, err = c.client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	}
	return err == nil && va.Status.Attached
}
