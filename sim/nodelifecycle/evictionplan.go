package nodelifecycle

// The taint eviction controller's planned evictions. A pod that tolerates
// its node's NoExecute taint for some seconds is deleted when they are
// over; if the pod goes first (deleted by someone else) or the taint does,
// the real controller cancels the plan and says so on the pod, by name:
// "Cancelling deletion of Pod <namespace>/<name>"
// (pkg/controller/tainteviction/taint_eviction.go, cancelWorkWithEvent). A
// plan that was carried out is not cancelled again.

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// cancelKeyPrefix marks a key of the controller's queue as a pod whose
// planned eviction is to be cancelled (node names have no '/'): the
// controller keeps one queue, so that it holds one place in the loop.
const cancelKeyPrefix = "cancel-eviction/"

// plan records that the pod's eviction from node is planned for later.
func (c *Controller) plan(podKey, node string) {
	c.mu.Lock()
	c.planned[podKey] = node
	c.mu.Unlock()
}

// carriedOut: the pod's eviction happened; nothing is left to cancel.
func (c *Controller) carriedOut(podKey string) {
	c.mu.Lock()
	delete(c.planned, podKey)
	c.mu.Unlock()
}

// podDeleted queues the cancellation of a deleted pod's planned eviction.
func (c *Controller) podDeleted(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	_, planned := c.planned[key]
	c.mu.Unlock()
	if planned {
		c.queue.Add(cancelKeyPrefix + key)
	}
}

// cancel cancels the planned evictions of the pods (by key), with the
// real controller's event for each.
func (c *Controller) cancel(podKeys ...string) {
	for _, key := range podKeys {
		c.mu.Lock()
		_, planned := c.planned[key]
		delete(c.planned, key)
		c.mu.Unlock()
		if !planned {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name}
		c.evictions.Eventf(ref, corev1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", key)
	}
}

// plannedOn are the pods, by key and in order, whose eviction from node is
// planned: cancelled when the node's NoExecute taints are gone.
func (c *Controller) plannedOn(node string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for key, n := range c.planned {
		if n == node {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}
