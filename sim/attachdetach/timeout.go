package attachdetach

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// AttachTimeout is how long one attach operation waits for the
// external-attacher to mark its VolumeAttachment attached: the CSI
// plugin's watchTimeout, csiTimeout (kubernetes pkg/volume/csi/csi_plugin.go).
const AttachTimeout = 2 * time.Minute

// attachWaiting is an attach operation waiting for its VolumeAttachment,
// as the CSI attacher's Attach waits (waitForVolumeAttachmentWithLister,
// kubernetes pkg/volume/csi/csi_attacher.go): when no external-attacher
// answers within AttachTimeout, the operation fails in the CSI plugin's
// words — "timed out waiting for external-attacher of <driver> CSI driver
// to attach volume <handle>" — reported as FailedAttachVolume, and the
// next operation after the controller's backoff waits again.
func (c *Controller) attachWaiting(name string, w *wanted, nodeName string, volume corev1.UniqueVolumeName) {
	now := c.clock.Now()
	c.mu.Lock()
	op := c.attaching[name]
	if op == nil {
		op = &operation{node: nodeName}
		c.attaching[name] = op
	}
	if op.waitingSince.IsZero() {
		op.waitingSince = now
	}
	deadline := op.waitingSince.Add(AttachTimeout)
	if now.Before(deadline) {
		c.mu.Unlock()
		c.queue.AddAfter(nodeName, deadline.Sub(now))
		return
	}
	op.waitingSince = time.Time{}
	c.mu.Unlock()
	c.attachFailed(name, w, nodeName, volume,
		fmt.Sprintf("timed out waiting for external-attacher of %s CSI driver to attach volume %s", w.driver, w.pv.Spec.CSI.VolumeHandle))
}
