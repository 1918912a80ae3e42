package attachdetach

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// attach makes sure the wanted volume is attached to the node, as the
// real reconciler's attach pass does: a volume already attached is left
// alone; a volume attached elsewhere that cannot be on two nodes gets one
// Multi-Attach event; otherwise the attach operation runs — it
// creates the VolumeAttachment if there is none and waits for the
// external-attacher to mark it attached, and when the attacher reports an
// error it fails with the attacher's message and is retried with the
// controller's backoff.
func (c *Controller) attach(ctx context.Context, name string, w *wanted, nodeName string) error {
	volume := UniqueVolumeName(w.driver, w.pv.Spec.CSI.VolumeHandle)
	now := c.clock.Now()
	c.mu.Lock()
	if a := c.actual[name]; a != nil && a.confirmed {
		a.detachRequested = time.Time{}
		c.mu.Unlock()
		return nil
	}
	if !multiAttachable(w.pv) {
		if others := c.attachedElsewhere(volume, nodeName); len(others) > 0 {
			report := c.multiReported[name] == ""
			c.multiReported[name] = nodeName
			c.mu.Unlock()
			if report {
				c.reportMultiAttach(w, others)
			}
			return nil // the other attachment's deletion brings the node back
		}
	}
	if op := c.attaching[name]; op != nil && now.Before(op.notBefore) {
		c.mu.Unlock()
		c.queue.AddAfter(nodeName, op.notBefore.Sub(now))
		return nil
	}
	c.mu.Unlock()

	va, err := c.vas.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.createAttachment(ctx, name, w, nodeName); err != nil {
			return err
		}
		c.attachWaiting(name, w, nodeName, volume)
		return nil
	case err != nil:
		return err
	case va.DeletionTimestamp != nil:
		c.attachFailed(name, w, nodeName, volume, "volume attachment is being deleted")
	case va.Status.Attached:
		c.attachSucceeded(name, w, nodeName, volume)
	case va.Status.AttachError != nil:
		c.attachFailed(name, w, nodeName, volume, va.Status.AttachError.Message)
	default:
		// The external-attacher is still at work (or there is none): its
		// update brings us back, or the attach operation times out.
		c.attachWaiting(name, w, nodeName, volume)
	}
	return nil
}

// createAttachment makes the VolumeAttachment of the CSI attacher's Attach
// (kubernetes pkg/volume/csi/csi_attacher.go): for a PV by its name, for a
// pod's inline in-tree volume of a plugin that migrated by the translated
// volume's spec (inlineVolumeSpec), there being no PV to name.
func (c *Controller) createAttachment(ctx context.Context, name string, w *wanted, nodeName string) error {
	source := storagev1.VolumeAttachmentSource{}
	if w.inline {
		source.InlineVolumeSpec = w.pv.Spec.DeepCopy()
	} else {
		pvName := w.pv.Name
		source.PersistentVolumeName = &pvName
	}
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: w.driver,
			NodeName: nodeName,
			Source:   source,
		},
	}
	_, err := c.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating VolumeAttachment %s: %w", name, err)
	}
	return nil
}

// attachSucceeded records the attachment and tells the pods, in the real
// controller's words (its message ends in a space: an empty detail).
func (c *Controller) attachSucceeded(name string, w *wanted, nodeName string, volume corev1.UniqueVolumeName) {
	c.mu.Lock()
	a := c.actual[name]
	if a == nil {
		a = &attachment{name: name, node: nodeName, volume: volume, mounted: true}
		c.putActual(a)
	}
	a.confirmed = true
	a.detaching = false
	a.detachRequested = time.Time{}
	delete(c.attaching, name)
	c.mu.Unlock()
	for _, pod := range w.pods {
		c.events.Eventf(pod, corev1.EventTypeNormal, "SuccessfulAttachVolume", "AttachVolume.Attach succeeded for volume %q ", w.pv.Name)
	}
}

// attachFailed tells the pods why, marks the attachment uncertain (it may
// be half done) and schedules the retry after the controller's backoff.
func (c *Controller) attachFailed(name string, w *wanted, nodeName string, volume corev1.UniqueVolumeName, reason string) {
	now := c.clock.Now()
	c.mu.Lock()
	if c.actual[name] == nil {
		c.putActual(&attachment{name: name, node: nodeName, volume: volume, mounted: true})
	}
	op := c.attaching[name]
	if op == nil {
		op = &operation{node: nodeName}
		c.attaching[name] = op
	}
	op.failures++
	op.waitingSince = time.Time{} // this operation is over
	delay := attachBackoffStart << (op.failures - 1)
	if op.failures > 16 || delay > attachBackoffMax {
		delay = attachBackoffMax
	}
	op.notBefore = now.Add(delay)
	c.mu.Unlock()
	for _, pod := range w.pods {
		c.events.Eventf(pod, corev1.EventTypeWarning, "FailedAttachVolume", "AttachVolume.Attach failed for volume %q : %s", w.pv.Name, reason)
	}
	c.queue.AddAfter(nodeName, delay)
}

// attachedElsewhere names the nodes the volume is known attached to, other
// than nodeName; the caller holds c.mu. Only attachments in the
// controller's memory count: one it does not know of blocks nothing here
// (the driver may still refuse the second attach).
func (c *Controller) attachedElsewhere(volume corev1.UniqueVolumeName, nodeName string) []string {
	var nodes []string
	for _, a := range c.ofVolume[volume] {
		if a.node != nodeName && a.confirmed {
			nodes = append(nodes, a.node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// reportMultiAttach tells the pods that want the volume why it is not
// attached, in the real controller's words: naming the pods in their
// namespace that use it on the other nodes (and counting those in other
// namespaces), or saying it waits for the detach when no pod there wants
// it any more. (Older releases began "Multi-Attach error for volume …";
// a v1.37.2 control plane says "Waiting for detach for volume …".)
func (c *Controller) reportMultiAttach(w *wanted, otherNodes []string) {
	var users []*corev1.Pod
	var pods []*corev1.Pod
	for _, n := range slices.Compact(slices.Sorted(slices.Values(otherNodes))) {
		on, _ := c.nodePods(n)
		pods = append(pods, on...)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for i := range p.Spec.Volumes {
			if pv := c.podVolume(p, &p.Spec.Volumes[i]); pv != nil && pv.Name == w.pv.Name {
				users = append(users, p)
				break
			}
		}
	}
	for _, pod := range w.pods {
		msg := "Volume is already exclusively attached to one node, waiting on detach before it can be attached to another node"
		if len(users) > 0 {
			var local []string
			others := 0
			for _, u := range users {
				if u.Namespace == pod.Namespace {
					local = append(local, u.Name)
				} else {
					others++
				}
			}
			switch {
			case len(local) > 0 && others > 0:
				msg = fmt.Sprintf("Volume is already used by pod(s) %s and %d pod(s) in different namespaces", strings.Join(local, ", "), others)
			case len(local) > 0:
				msg = fmt.Sprintf("Volume is already used by pod(s) %s", strings.Join(local, ", "))
			default:
				msg = fmt.Sprintf("Volume is already used by %d pod(s) in different namespaces", others)
			}
		}
		c.events.Eventf(pod, corev1.EventTypeWarning, "FailedAttachVolume", "Waiting for detach for volume %q %s", w.pv.Name, msg)
	}
}
