package kubelet

// Filesystem volumes: staging (MountDevice), publishing (SetUp) and their
// undoing (UnmountDevice, TearDown) — models kubernetes
// pkg/volume/csi/csi_attacher.go and csi_mounter.go (the CSI plugin) with
// the operation generator's MountVolume and its backoff
// (pkg/volume/util/operationexecutor/operation_generator.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
)

// nodeCaps are the node plugin's capabilities (NodeGetCapabilities).
type nodeCaps map[csi.NodeServiceCapability_RPC_Type]bool

// nodeCapabilities asks driver's node plugin what it can do, as the
// cluster asked it at start (driverinfo.AskNode); the real kubelet asks
// before each operation.
func (k *Kubelet) nodeCapabilities(ctx context.Context, driver string) (nodeCaps, error) {
	callCtx, cancel := k.csiCallContext(ctx)
	defer cancel()
	return driverinfo.AskNode(callCtx, k.nodeClient(driver))
}

// accessMode is the CSI access mode the kubelet asks for: the PV's first
// access mode (ReadWriteOnce if none), mapped as the kubelet's CSI client
// maps it — to SINGLE_NODE_MULTI_WRITER / SINGLE_NODE_SINGLE_WRITER when the
// driver has the SINGLE_NODE_MULTI_WRITER capability, else ReadWriteOnce
// and ReadWriteOncePod both to SINGLE_NODE_WRITER.
func accessMode(pv *corev1.PersistentVolume, caps nodeCaps) csi.VolumeCapability_AccessMode_Mode {
	mode := corev1.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	multiWriter := caps[csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER]
	switch mode {
	case corev1.ReadWriteOnce:
		if multiWriter {
			return csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadWriteOncePod:
		if multiWriter {
			return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return csi.VolumeCapability_AccessMode_UNKNOWN
}

// volumeCapability is the capability for a filesystem volume, with
// volume_mount_group when the fsGroup is delegated to the driver, and the
// PV's mount options followed by the SELinux context option when the
// volume has a label (selinux.go).
func volumeCapability(pv *corev1.PersistentVolume, caps nodeCaps, mountGroup *int64, seLinux string) *csi.VolumeCapability {
	mnt := &csi.VolumeCapability_MountVolume{FsType: pv.Spec.CSI.FSType, MountFlags: withSELinuxMountOption(pv.Spec.MountOptions, seLinux)}
	if mountGroup != nil {
		mnt.VolumeMountGroup = strconv.FormatInt(*mountGroup, 10)
	}
	return &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: accessMode(pv, caps)},
		AccessType: &csi.VolumeCapability_Mount{Mount: mnt},
	}
}

// blockCapability is the capability for a block volume.
func blockCapability(pv *corev1.PersistentVolume, caps nodeCaps) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: accessMode(pv, caps)},
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
	}
}

// podInfo is the volume context the kubelet adds for drivers with
// podInfoOnMount.
func podInfo(pod *corev1.Pod) map[string]string {
	return map[string]string{
		"csi.storage.k8s.io/pod.name":            pod.Name,
		"csi.storage.k8s.io/pod.namespace":       pod.Namespace,
		"csi.storage.k8s.io/pod.uid":             string(pod.UID),
		"csi.storage.k8s.io/serviceAccount.name": pod.Spec.ServiceAccountName,
		"csi.storage.k8s.io/ephemeral":           "false",
	}
}

// publishVolumeContext merges the PV's volume attributes with the pod's
// information when the CSIDriver asks for it.
func (k *Kubelet) publishVolumeContext(pod *corev1.Pod, pv *corev1.PersistentVolume) map[string]string {
	drv, err := k.drivers.Get(pv.Spec.CSI.Driver)
	if err != nil || drv.Spec.PodInfoOnMount == nil || !*drv.Spec.PodInfoOnMount {
		return pv.Spec.CSI.VolumeAttributes
	}
	out := map[string]string{}
	for key, v := range pv.Spec.CSI.VolumeAttributes {
		out[key] = v
	}
	for key, v := range podInfo(pod) {
		out[key] = v
	}
	return out
}

// fsGroupPolicy is the CSIDriver's fsGroupPolicy, ReadWriteOnceWithFSType
// when there is no CSIDriver object.
func (k *Kubelet) fsGroupPolicy(driver string) storagev1.FSGroupPolicy {
	drv, err := k.drivers.Get(driver)
	if err != nil || drv.Spec.FSGroupPolicy == nil {
		return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	}
	return *drv.Spec.FSGroupPolicy
}

// podFSGroup is the pod's fsGroup and fsGroupChangePolicy.
func podFSGroup(pod *corev1.Pod) (*int64, *corev1.PodFSGroupChangePolicy) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup, sc.FSGroupChangePolicy
	}
	return nil, nil
}

// mountVolume makes one volume of the pod ready, as the reconciler's mount
// (or, for a block volume, map) operation: wait for the attachment, stage
// the volume once for the node, publish it for the pod. With republish
// the volume is only published again.
//
// A failed operation is not tried again for the volume before its backoff
// has passed (500 ms, doubling up to 2 min 2 s), whatever wakes the pod, as
// the kubelet's operation executor keys its backoff by volume.
func (k *Kubelet) mountVolume(ctx context.Context, pod *corev1.Pod, v volumeToMount, republish bool) error {
	// The reconciler starts no operation for a volume already mounted for
	// the pod: the backoff (keyed by volume, so another pod's failure may
	// have set it) does not hold back a pod whose volume is ready.
	m := k.actual.mountedVolume(pod.UID, v.pv.Name)
	if m != nil && !m.uncertain && !republish {
		return nil
	}
	if wait := k.backoff.remaining(v.unique, k.clock.Now()); wait > 0 {
		return controller.RequeueAfter(wait)
	}
	err := k.mountVolumeOnce(ctx, pod, v, republish)
	var requeue controller.RequeueAfter
	switch {
	case err == nil:
		k.backoff.reset(v.unique)
	case errors.As(err, &requeue):
		// Waiting (for the claim, the attachment), not failing.
	default:
		return controller.RequeueAfter(k.backoff.failed(v.unique, k.clock.Now()))
	}
	return err
}

func (k *Kubelet) mountVolumeOnce(ctx context.Context, pod *corev1.Pod, v volumeToMount, republish bool) error {
	m := k.actual.mountedVolume(pod.UID, v.pv.Name)
	if m != nil && !m.uncertain && !republish {
		return nil
	}
	if m == nil {
		republish = false
	}
	// One operation per volume at a time (nestedpendingoperations): while
	// its device is being unstaged, the volume waits, and is staged again
	// once that is done (syncDevice wakes the pods that wait).
	if k.pending.underWay(v.unique) {
		return errNotReady
	}
	if k.stagedWithOtherLabel(v) {
		// The device is mounted with another pod's SELinux label: it is
		// unstaged first (the reconciler's unmountDetachDevices, as the
		// desired state no longer has it with that label), then staged
		// again with this one (actual_state_of_world.go PodExistsInVolume:
		// "waiting for unmount of volume ..., because it is already
		// mounted to a different pod with a different SELinux label").
		k.queueUnusedDevices()
		return errNotReady
	}
	if err := k.readWriteOncePodInUse(pod, v); err != nil {
		return err
	}
	publishContext, err := k.waitForAttach(v)
	if err != nil {
		return err
	}
	if driver := v.pv.Spec.CSI.Driver; !k.driverRegistered(driver) {
		// The kubelet knows only the drivers registered with it through
		// the plugin watcher.
		if v.block {
			k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume",
				"MapVolume.SetUpDevice failed for volume %q : kubernetes.io/csi: blockMapper.SetUpDevice failed to get CSI client: driver name %s not found in the list of registered CSI drivers",
				v.pv.Name, driver)
		} else {
			k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount",
				"MountVolume.MountDevice failed for volume %q : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name %s not found in the list of registered CSI drivers",
				v.pv.Name, driver)
		}
		return fmt.Errorf("volume %s of pod %s/%s: driver %s is not registered on node %s", v.pv.Name, pod.Namespace, pod.Name, driver, k.cfg.NodeName)
	}
	caps, err := k.nodeCapabilities(ctx, v.pv.Spec.CSI.Driver)
	if err != nil {
		return err
	}
	if v.block {
		return k.mapBlock(ctx, pod, v, publishContext, caps, republish)
	}
	return k.mountFilesystem(ctx, pod, v, publishContext, caps, republish)
}

// mountFilesystem stages (MountDevice) and publishes (SetUp) a filesystem
// volume, then gives it to the pod's fsGroup when the kubelet should.
func (k *Kubelet) mountFilesystem(ctx context.Context, pod *corev1.Pod, v volumeToMount, publishContext map[string]string, caps nodeCaps, republish bool) error {
	src := v.pv.Spec.CSI
	fsGroup, changePolicy := podFSGroup(pod)
	delegated := caps[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP]
	var mountGroup *int64
	if delegated {
		mountGroup = fsGroup
	}
	staging := ""
	if caps[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		staging = StagingPath(k.cfg.Dir, src.Driver, src.VolumeHandle)
		if !republish {
			if err := k.mountDevice(ctx, pod, v, publishContext, caps, staging, mountGroup); err != nil {
				return err
			}
		}
	}
	dir := podVolumeDir(k.cfg.Dir, pod.UID, v.pv.Name)
	target := filepath.Join(dir, "mount")
	// What a restarted kubelet reads to know what this directory holds.
	data := map[string]string{
		volDataSpecName: v.pv.Name, volDataHandle: src.VolumeHandle, volDataDriver: src.Driver, volDataNode: k.cfg.NodeName,
		volDataAttachment: attachdetach.AttachmentName(src.VolumeHandle, src.Driver, k.cfg.NodeName),
		volDataLifecycle:  string(storagev1.VolumeLifecyclePersistent),
	}
	if v.seLinux != "" {
		data[volDataSELinux] = v.seLinux
	}
	if err := saveVolumeData(dir, data); err != nil {
		return fmt.Errorf("volume %s of pod %s/%s: %w", v.pv.Name, pod.Namespace, pod.Name, err)
	}
	secrets, err := k.nodePublishSecrets(ctx, v.pv, false)
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s of pod %s: %w", v.pv.Name, pod.Name, err)
	}
	volumeContext, secrets, err := k.withServiceAccountTokens(ctx, pod, src.Driver, k.publishVolumeContext(pod, v.pv), secrets)
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s of pod %s: %w", v.pv.Name, pod.Name, err)
	}
	callCtx, cancel := k.csiCallContext(ctx)
	_, err = k.nodeClient(src.Driver).NodePublishVolume(callCtx, &csi.NodePublishVolumeRequest{
		VolumeId: src.VolumeHandle, PublishContext: publishContext, StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: volumeCapability(v.pv, caps, mountGroup, v.seLinux), Readonly: v.readOnly,
		VolumeContext: volumeContext, Secrets: secrets,
	})
	cancel()
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", v.pv.Name, err)
		if !isFinalError(err) {
			// Maybe mounted: unpublished if the pod goes first.
			k.recordMounted(pod, v, target, true)
		}
		return fmt.Errorf("NodePublishVolume %s for pod %s: %w", v.pv.Name, pod.Name, err)
	}
	// The driver said yes, and the kubelet takes its word, as the real one
	// does (pkg/volume/csi's SetUpAt checks nothing after
	// NodePublishVolume): a plugin without Bidirectional mount propagation
	// mounts where the kubelet never sees it, and the container gets the
	// empty directory (found with real nodes, missing-mount-propagation).
	if kubeletAppliesFSGroup(fsGroupRequest{FSGroup: fsGroup, Policy: k.fsGroupPolicy(src.Driver), ReadOnly: v.readOnly,
		FSType: src.FSType, AccessModes: v.pv.Spec.AccessModes, Delegated: delegated}) && !k.nothingMounted(target) {
		if err := setVolumeOwnership(target, *fsGroup, changePolicy, v.readOnly); err != nil {
			// Mounted, but unusable: the kubelet keeps it (to unmount
			// it later) and tries again.
			k.recordMounted(pod, v, target, true)
			k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : applyFSGroup failed for vol %s: %v",
				v.pv.Name, src.VolumeHandle, err)
			return fmt.Errorf("volume %s of pod %s: fsGroup: %w", v.pv.Name, pod.Name, err)
		}
	}
	// Set up: a volume that has grown is expanded now (offline), with
	// the published directory and the staging path (the device mount
	// path, whether or not the driver stages).
	if _, err := k.expandDuringMount(ctx, pod, v, target, StagingPath(k.cfg.Dir, src.Driver, src.VolumeHandle)); err != nil {
		// Mounted but not to be used: uncertain, so that it is set up
		// again, or torn down if the pod goes.
		k.recordMounted(pod, v, target, true)
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.Setup failed while expanding volume for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s of pod %s: node expansion: %w", v.pv.Name, pod.Name, err)
	}
	k.recordMounted(pod, v, target, false)
	return nil
}

// nothingMounted: a driver that mounts nothing (SkipMountCheck) left no
// target to give to an fsGroup.
func (k *Kubelet) nothingMounted(target string) bool {
	if !k.cfg.SkipMountCheck {
		return false
	}
	_, err := os.Stat(target)
	return os.IsNotExist(err)
}

// recordMounted records the volume published for the pod in the actual
// state; uncertain: maybe published.
func (k *Kubelet) recordMounted(pod *corev1.Pod, v volumeToMount, target string, uncertain bool) {
	k.actual.markMounted(pod.UID, v.pv.Name, &mountedVolume{unique: v.unique, pvName: v.pv.Name, handle: v.pv.Spec.CSI.VolumeHandle,
		target: target, block: v.block, uncertain: uncertain, specName: v.name})
}

// mountDevice stages a filesystem volume at its node-wide staging path,
// once for all pods (again when a restarted kubelet is not sure of it).
func (k *Kubelet) mountDevice(ctx context.Context, pod *corev1.Pod, v volumeToMount, publishContext map[string]string, caps nodeCaps, staging string, mountGroup *int64) error {
	src := v.pv.Spec.CSI
	st := k.actual.stagedVolume(v.unique)
	staged := st != nil
	if staged && !st.uncertain {
		return nil
	}
	secrets, err := k.nodeStageSecrets(ctx, v.pv, false)
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.MountDevice failed for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s: %w", v.pv.Name, err)
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return fmt.Errorf("creating staging dir: %w", err)
	}
	// Kept for UnmountDevice, also after a restart.
	data := map[string]string{volDataHandle: src.VolumeHandle, volDataDriver: src.Driver}
	if v.seLinux != "" {
		data[volDataSELinux] = v.seLinux
	}
	if err := saveVolumeData(filepath.Dir(staging), data); err != nil {
		return err
	}
	callCtx, cancel := k.csiCallContext(ctx)
	defer cancel()
	_, err = k.nodeClient(src.Driver).NodeStageVolume(callCtx, &csi.NodeStageVolumeRequest{
		VolumeId: src.VolumeHandle, PublishContext: publishContext, StagingTargetPath: staging,
		VolumeCapability: volumeCapability(v.pv, caps, mountGroup, v.seLinux), VolumeContext: src.VolumeAttributes, Secrets: secrets,
	})
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.MountDevice failed for volume %q : %v", v.pv.Name, err)
		if !isFinalError(err) && !staged {
			// The driver may be staging it still: the device is
			// uncertain, to be staged again or unstaged when unused.
			k.actual.markStaged(v.unique, &stagedVolume{path: staging, handle: src.VolumeHandle, pvName: v.pv.Name, uncertain: true, seLinux: v.seLinux})
		}
		return fmt.Errorf("NodeStageVolume %s: %w", v.pv.Name, err)
	}
	k.actual.markStaged(v.unique, &stagedVolume{path: staging, handle: src.VolumeHandle, pvName: v.pv.Name, seLinux: v.seLinux})
	return nil
}

// unpublish is the unmount operation: the volume's subpath bind mounts
// are cleaned first (CleanSubPaths), then TearDown: NodeUnpublishVolume,
// and the pod's volume directory goes if nothing is mounted there any more.
// A failed clean-up leaves the volume published and NodeUnpublishVolume
// not called; a failed TearDown leaves it maybe published
// (MarkVolumeMountAsUncertain). Either error is the operation generator's,
// in its words (GenerateUnmountVolumeFunc, kubernetes
// pkg/volume/util/operationexecutor/operation_generator.go), which the
// real kubelet only logs: the unmount operation records no event.
func (k *Kubelet) unpublish(ctx context.Context, uid types.UID, m *mountedVolume) error {
	if err := cleanSubPaths(k.cfg.Dir, uid, m.pvName); err != nil {
		return unmountError("error cleaning subPath mounts", uid, m, err)
	}
	callCtx, cancel := k.csiCallContext(ctx)
	_, err := k.nodeClient(m.driverName()).NodeUnpublishVolume(callCtx, &csi.NodeUnpublishVolumeRequest{VolumeId: m.handle, TargetPath: m.target})
	cancel()
	if err != nil {
		k.actual.markMountUncertain(uid, m.pvName)
		// The CSI plugin's TearDownAt words (pkg/volume/csi/csi_mounter.go).
		return unmountError("UnmountVolume.TearDown failed", uid, m, fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed: %w", err))
	}
	return removeMountDir(m.target)
}

// unmountError is a mounted volume's error as the operation executor words
// it for the log (MountedVolume.GenerateError's detailed message, kubernetes
// pkg/volume/util/operationexecutor/operation_executor.go): the volume by
// its unique name, the pod by its UID (its unique pod name).
func unmountError(prefix string, uid types.UID, m *mountedVolume, err error) error {
	return fmt.Errorf("%s for volume %q (UniqueName: %q) pod %q (UID: %q) : %w", prefix, m.unique, m.unique, uid, uid, err)
}

// unmountDevice is UnmountDevice: NodeUnstageVolume on driver's plugin,
// then the staging directory and its vol_data.json go.
func (k *Kubelet) unmountDevice(ctx context.Context, driver string, st *stagedVolume) error {
	callCtx, cancel := k.csiCallContext(ctx)
	_, err := k.nodeClient(driver).NodeUnstageVolume(callCtx, &csi.NodeUnstageVolumeRequest{VolumeId: st.handle, StagingTargetPath: st.path})
	cancel()
	if err != nil {
		return fmt.Errorf("NodeUnstageVolume %s: %w", st.handle, err)
	}
	return removeMountDir(st.path)
}

// removeMountDir removes a mount directory that is no longer mounted, the
// vol_data.json beside it and their parent, as the CSI plugin cleans up.
func removeMountDir(dir string) error {
	if mounted, err := mountinfo.Mounted(dir); err == nil && mounted {
		return nil
	}
	parent := filepath.Dir(dir)
	for _, p := range []string{dir, filepath.Join(parent, volDataFileName), parent} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cleaning up %s: %w", p, err)
		}
	}
	return nil
}

// removeUnmountedDir removes a directory (a pod's, a block volume's) once
// nothing is mounted under it: the kubelet never deletes through a mount.
func removeUnmountedDir(dir string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("listing mounts under %s: %w", dir, err)
	}
	if len(mounts) > 0 {
		return fmt.Errorf("pod directory %s still has %d mounts", dir, len(mounts))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing pod dir: %w", err)
	}
	return nil
}

// isFinalError reports whether a failed CSI call certainly did nothing:
// gRPC codes that say the driver may still be at work (a timeout, a lost
// connection, a busy driver) are not final, nor is a failure before the
// call, and leave the volume uncertain, as in the kubelet's CSI client
// (kubernetes pkg/volume/csi/csi_client.go, isFinalError).
func isFinalError(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// readWriteOncePodInUse is the operation generator's ReadWriteOncePod
// check, before it waits for the attachment (v1.37
// pkg/volume/util/operationexecutor/operation_generator.go): a volume whose
// only access mode is ReadWriteOncePod and that is mounted, or maybe
// mounted, for another pod on this node is not set up for this one.
func (k *Kubelet) readWriteOncePodInUse(pod *corev1.Pod, v volumeToMount) error {
	modes := v.pv.Spec.AccessModes
	if len(modes) != 1 || modes[0] != corev1.ReadWriteOncePod {
		return nil
	}
	if !k.actual.mountedForOtherPod(pod.UID, v.pv.Name) {
		return nil
	}
	const why = "volume uses the ReadWriteOncePod access mode and is already in use by another pod"
	if v.block {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.SetUpDevice failed for volume %q : %s", v.pv.Name, why)
	} else {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %s", v.pv.Name, why)
	}
	return fmt.Errorf("volume %s of pod %s/%s: %s", v.pv.Name, pod.Namespace, pod.Name, why)
}
