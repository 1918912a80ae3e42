package kubelet

// A pod that waited out its volumes' attach on a node that refused it —
// models the end of WaitForAttachAndMount under
// MutableCSINodeAllocatableCount (GA and locked on in v1.37; kubernetes
// pkg/kubelet/volumemanager/volume_manager.go), the CSI plugin's
// VerifyExhaustedResource (pkg/volume/csi/csi_plugin.go) and SyncPod's
// rejectPod (pkg/kubelet/kubelet.go). When the wait times out with a
// volume still unattached whose VolumeAttachment's attachError carries
// the gRPC code ResourceExhausted (the external-attacher saves it), of a
// driver whose CSIDriver has nodeAllocatableUpdatePeriodSeconds, the
// kubelet updates the CSINode from NodeGetInfo and rejects the pod: a
// VolumeAttachmentLimitExceeded event and the pod Failed with that reason,
// so that its controller makes another, which the scheduler places by the
// new count. Its volumes are then torn down as a terminated pod's, and the
// pod stays, Failed, until it is deleted.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/migration"
)

// reasonAttachLimitExceeded is the event's and the pod status's reason
// (VolumeAttachmentLimitExceededReason, kubernetes
// pkg/kubelet/volumemanager/volume_manager.go).
const reasonAttachLimitExceeded = "VolumeAttachmentLimitExceeded"

// waitTimedOut is the error WaitForAttachAndMount's poll ends with when
// its time is up (the context's, k8s.io/apimachinery wait).
const waitTimedOut = "context deadline exceeded"

// errPodRejected ends the sync of a pod the kubelet has just rejected:
// its containers are not started.
var errPodRejected = errors.New("pod rejected")

// attachLimitExceeded reports whether a volume of the pod that is still
// unattached failed to attach with ResourceExhausted, for a driver that
// asked for CSINode updates: VerifyExhaustedResource of each unattached
// volume, in order, which updates the CSINode for the first it finds.
func (k *Kubelet) attachLimitExceeded(ctx context.Context, p processed, unattached []string) bool {
	for _, name := range unattached {
		v := p.volumes[name]
		pv, err := k.volumes.Get(v.pvName)
		if err == nil {
			pv = migration.CSIPV(pv)
		}
		if err != nil || pv == nil || pv.Spec.CSI == nil {
			continue
		}
		driver := pv.Spec.CSI.Driver
		d, err := k.drivers.Get(driver)
		if err != nil || allocatableUpdatePeriod(d) == 0 {
			continue
		}
		va, err := k.vas.Get(attachdetach.AttachmentName(pv.Spec.CSI.VolumeHandle, driver, k.cfg.NodeName))
		if err != nil {
			continue
		}
		e := va.Status.AttachError
		if e == nil || e.ErrorCode == nil || *e.ErrorCode != int32(codes.ResourceExhausted) {
			continue
		}
		if driver == k.cfg.DriverName {
			_ = k.updateCSIDriver(ctx) // the real one logs a failure and goes on
		}
		return true
	}
	return false
}

// rejectForAttachLimit is the pod worker's SyncPod after a timed-out wait
// for the pod's volumes: it rejects the pod if the node's attach limit is
// why, and reports whether it did.
func (k *Kubelet) rejectForAttachLimit(ctx context.Context, pod *corev1.Pod) (bool, error) {
	p := k.processVolumes(pod)
	unmounted := k.unmountedVolumes(pod, p)
	unattached := k.unattachedVolumes(p)
	if len(unmounted) == 0 || !k.attachLimitExceeded(ctx, p, unattached) {
		return false, nil
	}
	msg := fmt.Sprintf("Node has reached its volume attachment limit, rejecting pod. unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v: %s",
		unmounted, unattached, p.failed, waitTimedOut)
	k.events.Event(pod, corev1.EventTypeWarning, reasonAttachLimitExceeded, msg)
	err := k.postStatus(ctx, pod, func(old corev1.PodStatus) corev1.PodStatus {
		s := *old.DeepCopy()
		s.Phase, s.Reason, s.Message = corev1.PodFailed, reasonAttachLimitExceeded, "Pod was rejected: "+msg
		return s
	})
	if err != nil {
		return false, err
	}
	// The pod worker goes on to terminate it: what the volume manager set
	// up for it is torn down (syncRejectedPod).
	k.podWorkers.setTermination(pod.UID, rejected)
	k.removePod(pod.UID)
	k.queue.Add(pod.Namespace + "/" + pod.Name)
	return true, nil
}

// syncRejectedPod is SyncTerminatedPod of a rejected pod: its volumes are
// torn down from it and its final status posted (TerminatePod); the pod
// stays in the API, Failed.
func (k *Kubelet) syncRejectedPod(ctx context.Context, pod *corev1.Pod, key string) error {
	if err := k.tearDown(ctx, pod.UID, key); err != nil {
		return err
	}
	if err := k.postStatus(ctx, pod, func(old corev1.PodStatus) corev1.PodStatus { return finalStatus(old, len(pod.Spec.InitContainers) > 0) }); err != nil {
		return err
	}
	k.podWorkers.setTermination(pod.UID, rejectedTornDown)
	return nil
}
