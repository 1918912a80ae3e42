package attachdetach

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// detachUnneeded detaches the node's attachments that no pod wants, as
// the real reconciler's detach pass does: once the kubelet no longer lists
// the volume in use — or at once when the node has the out-of-service
// taint, or when the node is unhealthy (not Ready, or gone) and
// maxWaitForUnmountDuration has passed since the volume stopped being
// wanted. Detaching is deleting the VolumeAttachment, after the volume
// has left node.status.volumesAttached; the external-attacher does the
// rest, and the attachment leaves the controller's memory when the object
// is gone.
//
// It reports whether it wrote the node's status.
func (c *Controller) detachUnneeded(ctx context.Context, nodeName string, node *corev1.Node, desired map[string]*wanted) (bool, error) {
	now := c.clock.Now()
	healthy := node != nil && nodeReady(node)
	outOfService := node != nil && hasTaint(node, corev1.TaintNodeOutOfService)
	var detach []string
	verify := map[string]bool{}
	c.mu.Lock()
	for _, a := range c.entriesOn(nodeName) {
		if desired[a.name] != nil || a.detaching {
			continue
		}
		if a.detachRequested.IsZero() {
			a.detachRequested = now
		}
		deadline := a.detachRequested.Add(c.maxWaitForUnmount)
		force := !healthy && !now.Before(deadline)
		if a.mounted && !force && !outOfService {
			if !healthy {
				c.queue.AddAfter(nodeName, deadline.Sub(now))
			}
			continue // the kubelet's next status update brings us back
		}
		a.detaching = true
		detach = append(detach, a.name)
		verify[a.name] = !force && !outOfService
	}
	c.mu.Unlock()
	detach, err := c.notInUse(ctx, nodeName, detach, verify)
	if err != nil || len(detach) == 0 {
		return false, err
	}
	// The volume is no longer safe to mount: out of the node's status first.
	if node != nil {
		if err := c.reportAttached(ctx, node); err != nil {
			c.undoDetach(detach)
			return false, err
		}
	}
	for _, name := range detach {
		err := c.client.StorageV1().VolumeAttachments().Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			c.detached(name) // already gone: detached
			continue
		}
		if err != nil {
			c.undoDetach([]string{name})
			return true, fmt.Errorf("deleting VolumeAttachment %s: %w", name, err)
		}
	}
	return node != nil, nil
}

// notInUse keeps of detach the attachments that are safe to detach: a
// detach that is not forced first reads the Node from the API server, not
// from the controller's informer, which may be behind, and a volume the
// kubelet lists in use there is not detached but taken as mounted
// (verifyVolumeIsSafeToDetach, kubernetes
// pkg/volume/util/operationexecutor/operation_generator.go; the real
// controller has by then taken the volume out of volumesAttached, and puts
// it back, which this one spares). A Node that is gone is no obstacle.
func (c *Controller) notInUse(ctx context.Context, nodeName string, detach []string, verify map[string]bool) ([]string, error) {
	if !slices.ContainsFunc(detach, func(name string) bool { return verify[name] }) {
		return detach, nil
	}
	node, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return detach, nil
	}
	if err != nil {
		c.undoDetach(detach)
		return nil, fmt.Errorf("node %s: %w", nodeName, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var safe []string
	for _, name := range detach {
		if a := c.actual[name]; a != nil && verify[name] && slices.Contains(node.Status.VolumesInUse, a.volume) {
			a.detaching, a.mounted = false, true
			continue
		}
		safe = append(safe, name)
	}
	return safe, nil
}

// undoDetach puts attachments whose detach could not start back as
// attached.
func (c *Controller) undoDetach(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range names {
		if a := c.actual[name]; a != nil {
			a.detaching = false
		}
	}
}

// reportAttached writes node.status.volumesAttached: the node's
// attachments the controller knows attached and is not detaching.
func (c *Controller) reportAttached(ctx context.Context, node *corev1.Node) error {
	c.mu.Lock()
	var attached []corev1.AttachedVolume
	for _, a := range c.entriesOn(node.Name) {
		if a.confirmed && !a.detaching {
			attached = append(attached, corev1.AttachedVolume{Name: a.volume})
		}
	}
	c.mu.Unlock()
	sort.Slice(attached, func(i, j int) bool { return attached[i].Name < attached[j].Name })
	if slices.Equal(attached, node.Status.VolumesAttached) {
		return nil
	}
	// A merge patch of this one field, so it never conflicts with the
	// kubelet's own status updates.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"volumesAttached": attached}})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("updating volumesAttached of node %s: %w", node.Name, err)
	}
	return nil
}
