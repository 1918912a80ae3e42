// Package expand is the simulated expand controller of the
// kube-controller-manager (kubernetes pkg/controller/volume/expand). In
// v1.37 it expands no volume itself: for a CSI volume (and any volume no
// in-tree plugin expands) it only says, with an ExternalExpanding event on
// the claim, that an external resizer is expected to; for a volume of a
// migrated in-tree plugin it also names the plugin's CSI driver as the
// claim's resizer.
package expand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// The event the controller records (kubernetes
// pkg/controller/volume/events/event.go, expand_controller.go).
const (
	EventExternalExpanding = "ExternalExpanding"
	ExternalExpandingMsg   = "waiting for an external controller to expand this PVC"
	// eventSource is the component its events name.
	eventSource = "volume_expand"
)

// Controller is the expand controller.
type Controller struct {
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	queue  controller.Queue
	events record.EventRecorder

	// grown are the queued claims whose request exceeded their capacity
	// when the informer handed them over. The real controller syncs
	// within milliseconds of that, long before an external resizer (API
	// writes and a CSI call) can have finished; the simulation runs a
	// resizer's whole sync as one step, which the loop may order first,
	// so the sync judges the claim as it was then.
	mu    sync.Mutex
	grown map[string]bool
}

// New wires the controller to the factory's claim informer.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	c := &Controller{client: client, queue: rt.NewQueue("volume_expand"), grown: map[string]bool{}}
	c.events, _ = rt.NewEventRecorder(client, eventSource, "")
	inf := factory.Core().V1().PersistentVolumeClaims()
	c.claims = inf.Lister()
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		// A claim whose request grew needs expanding; one whose capacity
		// grew may leave a PV annotation to clean up.
		UpdateFunc: func(oldObj, newObj any) {
			was, ok1 := oldObj.(*corev1.PersistentVolumeClaim)
			claim, ok2 := newObj.(*corev1.PersistentVolumeClaim)
			if !ok1 || !ok2 {
				return
			}
			oldReq, newReq := was.Spec.Resources.Requests[corev1.ResourceStorage], claim.Spec.Resources.Requests[corev1.ResourceStorage]
			oldCap, newCap := was.Status.Capacity[corev1.ResourceStorage], claim.Status.Capacity[corev1.ResourceStorage]
			if newReq.Cmp(oldReq) > 0 || newCap.Cmp(oldCap) > 0 {
				c.enqueue(claim)
			}
		},
		DeleteFunc: c.enqueue,
	})
	return c
}

// enqueue queues bound claims only.
func (c *Controller) enqueue(obj any) {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || claim.Status.Phase != corev1.ClaimBound {
		return
	}
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(claim); err == nil {
		request, capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage], claim.Status.Capacity[corev1.ResourceStorage]
		if request.Cmp(capacity) > 0 {
			c.mu.Lock()
			c.grown[key] = true
			c.mu.Unlock()
		}
		c.queue.Add(key)
	}
}

// Workers is the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "volume_expand", Queue: c.queue, Sync: c.sync}}
}

// Start starts the controller in a simulated cluster (controller.Start):
// it has no periodic jobs and no start-up check.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	return controller.Component{Workers: New(d.Client, d.Informers, d.Runtime).Workers()}, nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	c.mu.Lock()
	grown := c.grown[key]
	delete(c.grown, key)
	c.mu.Unlock()
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// The real controller reads the volume from the API server.
	pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("failed to get PV %q: %v", claim.Spec.VolumeName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != claim.Namespace || ref.UID != claim.UID {
		return fmt.Errorf("persistent Volume is not bound to PVC being updated : %s", key)
	}
	request, capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage], claim.Status.Capacity[corev1.ResourceStorage]
	if request.Cmp(capacity) <= 0 && !grown && !metav1.HasAnnotation(pv.ObjectMeta, volumeutil.AnnPreResizeCapacity) {
		return nil
	}
	// A volume of a migrated in-tree plugin is the CSI driver's to expand:
	// the claim names it as its resizer, which the external-resizer of that
	// driver looks for.
	if plugin, driver, ok := migration.PluginOf(pv); ok {
		c.events.Event(claim, corev1.EventTypeNormal, EventExternalExpanding,
			fmt.Sprintf("CSI migration enabled for %s; waiting for external resizer to expand the pvc", plugin))
		if err := c.setResizer(ctx, claim, driver); err != nil {
			msg := fmt.Sprintf("error setting resizer annotation to pvc %s, with error %v", key, err)
			c.events.Event(claim, corev1.EventTypeWarning, EventExternalExpanding, msg)
			return errors.New(msg)
		}
		return nil
	}
	// No in-tree plugin expands a CSI volume, nor any other volume of the
	// kinds csisim runs: an external controller is expected to; the
	// claim is not queued again.
	c.events.Event(claim, corev1.EventTypeNormal, EventExternalExpanding, ExternalExpandingMsg)
	return nil
}

// setResizer names the claim's resizer (AnnResizer) with a strategic
// merge patch of its status subresource, as the real controller's
// SetClaimResizer does (kubernetes pkg/volume/util/resize_util.go); a
// claim that names it already is left alone.
func (c *Controller) setResizer(ctx context.Context, claim *corev1.PersistentVolumeClaim, driver string) error {
	if claim.Annotations[volumeutil.AnnResizer] == driver {
		return nil
	}
	next := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&next.ObjectMeta, volumeutil.AnnResizer, driver)
	from, err := json.Marshal(claim)
	if err != nil {
		return err
	}
	to, err := json.Marshal(next)
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(from, to, corev1.PersistentVolumeClaim{})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
