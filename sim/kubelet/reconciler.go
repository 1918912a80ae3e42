package kubelet

// The volume manager's reconciler: it drives the actual state
// (actual_state_of_world.go) toward the desired one
// (desired_state_of_world.go) — models kubernetes
// pkg/kubelet/volumemanager/reconciler/reconciler_common.go:
// mountOrAttachVolumes (setUp: wait for the attachment, stage, publish),
// unmountVolumes (unmountPodVolumes), unmountDetachDevices (syncDevice)
// and expandVolume (expandInUse, expand.go). The operations themselves are
// the operation generator's and the CSI plugin's (mount.go, block.go,
// inline.go), run one per volume with a backoff (operations.go).
//
// The real reconciler loops every 100 ms over every volume of the node.
// The simulated one runs for one pod when its pod worker syncs it, and for
// one device in a queue key of its own once a pod's volumes are torn down
// from it (the device's unstaging may outlast the pod), so that a seed
// gives one order of CSI calls.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
)

// setUp mounts (or maps) every volume of the pod; republish only publishes
// again those whose driver requires it.
func (k *Kubelet) setUp(ctx context.Context, pod *corev1.Pod, republish bool) error {
	// Inline volumes need no claim and no attachment: each is set up
	// whatever the pod's other volumes wait for (inline.go). Their
	// failure, with its backoff, is what the sync waits for.
	inlineErr := k.setUpInline(ctx, pod, republish)
	if err := k.setUpClaimVolumes(ctx, pod, republish); inlineErr == nil || err != nil && !errors.Is(err, errNotReady) {
		return err
	}
	return inlineErr
}

// setUpClaimVolumes takes the pod's claim volumes into the desired state
// (populator.go) and sets them up.
func (k *Kubelet) setUpClaimVolumes(ctx context.Context, pod *corev1.Pod, republish bool) error {
	vols, err := k.populatePod(pod)
	if err != nil {
		return err
	}
	// An attached volume is mounted only once the node's status has
	// reported it in volumesInUse, so the attach/detach controller never
	// detaches what is about to be mounted. The report is the periodic
	// node status sync's (Heartbeat), as in the real kubelet, whose
	// VerifyControllerAttachedVolume refuses ("Volume has not been added
	// to the list of VolumesInUse in the node's volume status") until then
	// (pkg/volume/util/operationexecutor/operation_generator.go); volumes
	// that need no attach do not wait.
	if !k.reportedInUse(vols) {
		return errNotReady
	}
	for _, v := range vols {
		if republish && !k.requiresRepublish(v.pv.Spec.CSI.Driver) {
			continue
		}
		if err := k.mountVolume(ctx, pod, v, republish); err != nil {
			return err
		}
	}
	return nil
}

// waitForAttach returns the publish context of an attached volume, or asks
// to be retried: the volume must be in node.status.volumesAttached and its
// VolumeAttachment must say attached, as the real kubelet checks
// (VerifyControllerAttachedVolume).
func (k *Kubelet) waitForAttach(v volumeToMount) (map[string]string, error) {
	if !k.attachRequired(v.pv.Spec.CSI.Driver) {
		return nil, nil
	}
	node, err := k.nodes.Get(k.cfg.NodeName)
	if err != nil {
		return nil, errNotReady
	}
	listed := slices.ContainsFunc(node.Status.VolumesAttached, func(a corev1.AttachedVolume) bool { return a.Name == v.unique })
	if !listed {
		return nil, errNotReady
	}
	va, err := k.vas.Get(attachdetach.AttachmentName(v.pv.Spec.CSI.VolumeHandle, v.pv.Spec.CSI.Driver, k.cfg.NodeName))
	if err != nil || !va.Status.Attached {
		return nil, errNotReady
	}
	return va.Status.AttachmentMetadata, nil
}

// unmountPodVolumes unpublishes (or unmaps) each volume published for the
// pod, in the order of their names, and forgets it in the actual state. A
// failed unmount is not tried again for the volume and the pod before its
// backoff has passed (the operation executor keys an unmount by both),
// whatever wakes the pod.
func (k *Kubelet) unmountPodVolumes(ctx context.Context, uid types.UID) error {
	for _, name := range k.actual.podVolumeNames(uid) {
		m := k.actual.mountedVolume(uid, name)
		if m == nil {
			continue // torn down meanwhile by another sync
		}
		op := unmountOp(m.unique, uid)
		if wait := k.unmountBackoff.remaining(op, k.clock.Now()); wait > 0 {
			return controller.RequeueAfter(wait)
		}
		var err error
		if m.block {
			err = k.unmapBlock(ctx, uid, m)
		} else {
			err = k.unpublish(ctx, uid, m)
		}
		if err != nil {
			return fmt.Errorf("%w (%w)", err, controller.RequeueAfter(k.unmountBackoff.failed(op, k.clock.Now())))
		}
		k.unmountBackoff.reset(op)
		k.actual.markUnmounted(uid, name)
	}
	return nil
}

// unmountOp names the unmount of a volume for a pod in the operation
// executor's backoff.
func unmountOp(u corev1.UniqueVolumeName, uid types.UID) corev1.UniqueVolumeName {
	return u + "/" + corev1.UniqueVolumeName(uid)
}

// deviceKeyPrefix begins the queue key of the unstaging of one device: the
// reconciler's unmountDetachDevices for that volume. No pod key looks like
// it.
const deviceKeyPrefix = "#unmount-device/"

// usedVolumes are the volumes some pod is to have, or has published. A
// volume staged with another SELinux label than the one the desired state
// has for it counts only while published: the desired state wants it
// mounted otherwise (VolumeExists with the staged label).
func (k *Kubelet) usedVolumes() map[corev1.UniqueVolumeName]bool {
	used := k.desired.volumes()
	for u := range used {
		if st := k.actual.stagedVolume(u); st != nil && !st.uncertain && st.seLinux != k.desired.seLinuxLabel(u) {
			delete(used, u)
		}
	}
	for _, m := range k.actual.allMounted() {
		used[m.unique] = true
	}
	return used
}

// stagedWithOtherLabel says whether the volume is staged, for certain,
// with another SELinux label than v's.
func (k *Kubelet) stagedWithOtherLabel(v volumeToMount) bool {
	st := k.actual.stagedVolume(v.unique)
	return st != nil && !st.uncertain && !st.block && st.seLinux != v.seLinux
}

// queueUnusedDevices has the reconciler unstage, each in a sync of its
// own, the staged volumes that no pod has published and none is to have,
// and forgets what the node knew of the size of a volume gone from both
// states and not staged.
func (k *Kubelet) queueUnusedDevices() {
	used := k.usedVolumes()
	for _, u := range k.actual.stagedVolumes() {
		if !used[u] {
			k.queue.Add(deviceKeyPrefix + string(u))
		}
	}
	k.forgetUnusedSizes(used)
}

// syncDevice unstages a staged volume if no pod has published it and none
// is to have it (UnmountDevice, or TearDownDevice for a block volume). It
// is one operation of the volume, which no other may overlap
// (nestedpendingoperations): a pod that comes for the volume meanwhile
// waits (mountVolumeOnce) and stages it again once it is done. A failure
// is retried with the queue's backoff, the operation executor's.
func (k *Kubelet) syncDevice(ctx context.Context, u corev1.UniqueVolumeName) error {
	used := k.usedVolumes()
	st := k.actual.stagedVolume(u)
	if st == nil || used[u] || !k.pending.start(u) {
		return nil
	}
	var err error
	if st.block {
		err = k.tearDownBlockDevice(ctx, driverOf(u), st)
	} else {
		err = k.unmountDevice(ctx, driverOf(u), st)
	}
	k.pending.done(u)
	if err != nil {
		return err
	}
	k.actual.markUnstaged(u)
	k.forgetUnusedSizes(used)
	// A pod that waited for the unstaging may stage the volume again.
	k.enqueuePending()
	return nil
}

// forgetUnusedSizes: a volume no pod uses and not staged is gone from the
// volume manager's states, and what it knew of its size with it.
func (k *Kubelet) forgetUnusedSizes(used map[corev1.UniqueVolumeName]bool) {
	for _, u := range k.actual.sizedVolumes() {
		if !used[u] && k.actual.stagedVolume(u) == nil {
			k.actual.forgetSize(u)
			k.desired.forgetSize(u)
		}
	}
}
