package kubelet

// The kubelet's updates of its CSINode's allocatable count — models
// kubernetes pkg/volume/csi/csi_node_updater.go (MutableCSINodeAllocatableCount,
// KEP-4876, GA and locked on in v1.37): while the driver is registered and
// its CSIDriver has nodeAllocatableUpdatePeriodSeconds, the kubelet asks the
// node plugin NodeGetInfo every period and writes the driver's CSINode
// entry anew if its node ID, topology keys or allocatable count changed
// (updateCSIDriver, pkg/volume/csi/csi_plugin.go; nodeinfomanager
// UpdateCSIDriver). The period's ticker starts again, from its beginning,
// when the driver registers and when the CSIDriver comes, goes or changes
// its period. The same update follows a pod's wait for a volume whose
// attach failed with ResourceExhausted (attach_limit.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/csisim/csisim/sim/controller"
)

// csiNodeUpdaterKey is the pod worker queue's key of the periodic update.
const csiNodeUpdaterKey = "#csinode-updater"

// csiNodeUpdater is the ticker of the periodic update: zero when none runs.
type csiNodeUpdater struct {
	period time.Duration
	next   time.Time
}

// allocatableUpdatePeriod is the CSIDriver's nodeAllocatableUpdatePeriodSeconds,
// 0 without it or without the CSIDriver.
func allocatableUpdatePeriod(d *storagev1.CSIDriver) time.Duration {
	if d == nil || d.Spec.NodeAllocatableUpdatePeriodSeconds == nil {
		return 0
	}
	return time.Duration(*d.Spec.NodeAllocatableUpdatePeriodSeconds) * time.Second
}

// addCSINodeUpdaterHandlers restarts the ticker on the CSIDriver's events,
// as the real updater's handlers do: on an update only when the period
// changed.
func (k *Kubelet) addCSINodeUpdaterHandlers(drivers cache.SharedIndexInformer) {
	name := func(obj any) string {
		if d, ok := obj.(*storagev1.CSIDriver); ok {
			return d.Name
		}
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return t.Key
		}
		return ""
	}
	_, _ = drivers.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { k.syncCSINodeUpdater(name(obj)) },
		UpdateFunc: func(old, cur any) {
			o, _ := old.(*storagev1.CSIDriver)
			c, _ := cur.(*storagev1.CSIDriver)
			if allocatableUpdatePeriod(o) != allocatableUpdatePeriod(c) {
				k.syncCSINodeUpdater(name(cur))
			}
		},
		DeleteFunc: func(obj any) { k.syncCSINodeUpdater(name(obj)) },
	})
}

// syncCSINodeUpdater starts the ticker afresh, or stops it: it runs while
// the driver is registered and its CSIDriver has a period.
func (k *Kubelet) syncCSINodeUpdater(driver string) {
	if driver != k.cfg.DriverName {
		return
	}
	var period time.Duration
	if d, err := k.drivers.Get(driver); err == nil && k.driverRegistered(driver) {
		period = allocatableUpdatePeriod(d)
	}
	k.mu.Lock()
	k.updater = csiNodeUpdater{}
	if period > 0 {
		k.updater = csiNodeUpdater{period: period, next: k.clock.Now().Add(period)}
	}
	k.mu.Unlock()
	if period > 0 {
		k.queue.AddAfter(csiNodeUpdaterKey, period)
	}
}

// tickCSINodeUpdater is the ticker's tick, when it is due: the update, and
// the next tick a period later.
func (k *Kubelet) tickCSINodeUpdater(ctx context.Context) error {
	now := k.clock.Now()
	k.mu.Lock()
	u := k.updater
	if u.period > 0 && !now.Before(u.next) {
		k.updater.next = u.next.Add(u.period)
	}
	k.mu.Unlock()
	switch {
	case u.period == 0:
		return nil // stopped
	case now.Before(u.next):
		return controller.RequeueAfter(u.next.Sub(now))
	}
	if !k.Stopped() {
		if err := k.updateCSIDriver(ctx); err != nil {
			// The real updater logs it and waits for the next tick.
			klog.FromContext(ctx).Error(err, "Failed to update CSIDriver", "node", k.cfg.NodeName, "driver", k.cfg.DriverName)
		}
	}
	return controller.RequeueAfter(u.next.Add(u.period).Sub(now))
}

// updateCSIDriver is updateCSIDriver of pkg/volume/csi/csi_plugin.go:
// NodeGetInfo, and the driver's CSINode entry written if it changed (only
// the CSINode: the Node's annotation and labels are registration's).
func (k *Kubelet) updateCSIDriver(ctx context.Context) error {
	callCtx, cancel := k.csiCallContext(ctx)
	info, err := k.nodeClient(k.cfg.DriverName).NodeGetInfo(callCtx, &csi.NodeGetInfoRequest{})
	cancel()
	if err != nil {
		return fmt.Errorf("failed to get NodeGetInfo from driver %q: %w", k.cfg.DriverName, err)
	}
	if err := k.installInCSINode(ctx, k.csiNodeDriver(k.cfg.DriverName, info)); err != nil {
		return fmt.Errorf("failed to update driver %q: %w", k.cfg.DriverName, err)
	}
	return nil
}
