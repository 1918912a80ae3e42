package kubelet

// Block volumes (volumeMode: Block): staging, publishing and mapping a
// device for a pod, and undoing it — models kubernetes
// pkg/volume/csi/csi_block.go (the CSI plugin's block mapper: SetUpDevice,
// MapPodDevice, TearDownDevice, UnmapPodDevice) with the operation
// generator's MapVolume/UnmapVolume steps
// (pkg/volume/util/operationexecutor/operation_generator.go) and the
// global map path's loop device lock (pkg/volume/util/volumepathhandler).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/attachdetach"
)

// mapBlock is the kubelet's block volume mapper (volumeMode: Block):
//   - SetUpDevice: NodeStageVolume at volumeDevices/staging/<PV>, once for
//     the node;
//   - MapPodDevice: NodePublishVolume at volumeDevices/publish/<PV>/<pod
//     UID>, where the driver puts the device;
//   - MapBlockVolume: the device bind-mounted at volumeDevices/<PV>/dev/<pod
//     UID> (which keeps it from going while the pod uses it), and the pod's
//     device pods/<UID>/volumeDevices/kubernetes.io~csi/<PV>, a symlink to
//     the publish path.
func (k *Kubelet) mapBlock(ctx context.Context, pod *corev1.Pod, v volumeToMount, publishContext map[string]string, caps nodeCaps, republish bool) error {
	src := v.pv.Spec.CSI
	if err := saveVolumeData(blockDataDir(k.cfg.Dir, v.pv.Name), map[string]string{
		volDataSpecName: v.pv.Name, volDataHandle: src.VolumeHandle, volDataDriver: src.Driver, volDataNode: k.cfg.NodeName,
		volDataAttachment: attachdetach.AttachmentName(src.VolumeHandle, src.Driver, k.cfg.NodeName),
	}); err != nil {
		return fmt.Errorf("volume %s: %w", v.pv.Name, err)
	}
	capability := blockCapability(v.pv, caps)
	staging := ""
	// setUpStaging: the staging path if SetUpDevice staged the volume in
	// this operation, what an expansion at the end of it is given.
	setUpStaging := ""
	if caps[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		staging = BlockStagingPath(k.cfg.Dir, v.pv.Name)
		if !republish {
			staged, err := k.setUpDevice(ctx, pod, v, publishContext, capability, staging)
			if err != nil {
				return err
			}
			if staged {
				setUpStaging = staging
			}
		}
	}
	publish := BlockPublishPath(k.cfg.Dir, v.pv.Name, pod.UID)
	secrets, err := k.nodePublishSecrets(ctx, v.pv, true)
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.MapPodDevice failed for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s of pod %s: %w", v.pv.Name, pod.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(publish), 0o750); err != nil {
		return fmt.Errorf("creating block publish dir: %w", err)
	}
	callCtx, cancel := k.csiCallContext(ctx)
	_, err = k.nodeClient(src.Driver).NodePublishVolume(callCtx, &csi.NodePublishVolumeRequest{
		VolumeId: src.VolumeHandle, PublishContext: publishContext, StagingTargetPath: staging, TargetPath: publish,
		VolumeCapability: capability, Readonly: v.readOnly, VolumeContext: src.VolumeAttributes, Secrets: secrets,
	})
	cancel()
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.MapPodDevice failed for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("NodePublishVolume %s for pod %s: %w", v.pv.Name, pod.Name, err)
	}
	if err := k.mapDevice(publish, v.pv.Name, pod.UID); err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.MapBlockVolume failed for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s of pod %s: %w", v.pv.Name, pod.Name, err)
	}
	// Unlike a filesystem mount, a block mapping is announced, twice.
	k.events.Eventf(pod, corev1.EventTypeNormal, "SuccessfulMountVolume", "MapVolume.MapPodDevice succeeded for volume %q globalMapPath %q",
		v.pv.Name, blockGlobalMapPath(RealDir, v.pv.Name))
	k.events.Eventf(pod, corev1.EventTypeNormal, "SuccessfulMountVolume", "MapVolume.MapPodDevice succeeded for volume %q volumeMapPath %q",
		v.pv.Name, podDeviceDir(RealDir, pod.UID))
	// The device is the publish path: the volume's device path from now
	// on, which an online expansion passes as volume_path.
	k.actual.updateSize(v.unique, func(s *actualSize) { s.devicePath = publish })
	// A volume that has grown is expanded now (offline): volume_path is
	// the device, the staging path only if staged just now.
	if _, err := k.expandDuringMount(ctx, pod, v, publish, setUpStaging); err != nil {
		k.recordMounted(pod, v, publish, true)
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.MarkVolumeAsMounted failed while expanding volume for volume %q : %v", v.pv.Name, err)
		return fmt.Errorf("volume %s of pod %s: node expansion: %w", v.pv.Name, pod.Name, err)
	}
	k.recordMounted(pod, v, publish, false)
	return nil
}

// setUpDevice stages a block volume once for the node; it reports
// whether it staged it now.
func (k *Kubelet) setUpDevice(ctx context.Context, pod *corev1.Pod, v volumeToMount, publishContext map[string]string, capability *csi.VolumeCapability, staging string) (bool, error) {
	src := v.pv.Spec.CSI
	if st := k.actual.stagedVolume(v.unique); st != nil && !st.uncertain {
		return false, nil
	}
	secrets, err := k.nodeStageSecrets(ctx, v.pv, true)
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.SetUpDevice failed for volume %q : %v", v.pv.Name, err)
		return false, fmt.Errorf("volume %s: %w", v.pv.Name, err)
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return false, fmt.Errorf("creating block staging dir: %w", err)
	}
	callCtx, cancel := k.csiCallContext(ctx)
	defer cancel()
	_, err = k.nodeClient(src.Driver).NodeStageVolume(callCtx, &csi.NodeStageVolumeRequest{
		VolumeId: src.VolumeHandle, PublishContext: publishContext, StagingTargetPath: staging,
		VolumeCapability: capability, VolumeContext: src.VolumeAttributes, Secrets: secrets,
	})
	if err != nil {
		k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMapVolume", "MapVolume.SetUpDevice failed for volume %q : %v", v.pv.Name, err)
		return false, fmt.Errorf("NodeStageVolume %s: %w", v.pv.Name, err)
	}
	k.actual.markStaged(v.unique, &stagedVolume{path: staging, handle: src.VolumeHandle, pvName: v.pv.Name, block: true})
	return true, nil
}

// mapDevice bind-mounts the published device into the global map
// directory and links it into the pod's device directory. A driver that
// mounts nothing (the mock) gets only the link.
func (k *Kubelet) mapDevice(publish, pvName string, uid types.UID) error {
	global := filepath.Join(blockGlobalMapPath(k.cfg.Dir, pvName), string(uid))
	if !k.cfg.SkipMountCheck {
		if err := os.MkdirAll(filepath.Dir(global), 0o750); err != nil {
			return fmt.Errorf("creating global map dir: %w", err)
		}
		f, err := os.OpenFile(global, os.O_CREATE|os.O_RDONLY, 0o640)
		if err != nil {
			return fmt.Errorf("creating global map file: %w", err)
		}
		_ = f.Close()
		if mounted, _ := mountinfo.Mounted(global); !mounted {
			if err := unix.Mount(publish, global, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind mount %s to %s: %w", publish, global, err)
			}
		}
		// The file descriptor lock: a loop device on the mapped device
		// keeps it open, so that it cannot silently go and another device
		// take its name while the pod uses it.
		if err := attachFileDevice(global); err != nil {
			return err
		}
	}
	link := PodDevicePath(k.cfg.Dir, uid, pvName)
	if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
		return fmt.Errorf("creating pod device dir: %w", err)
	}
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("replacing %s: %w", link, err)
	}
	if err := os.Symlink(publish, link); err != nil {
		return fmt.Errorf("linking pod device: %w", err)
	}
	return nil
}

// unmapBlock undoes mapBlock for one pod: the pod's link, the global bind
// mount, then NodeUnpublishVolume.
func (k *Kubelet) unmapBlock(ctx context.Context, uid types.UID, m *mountedVolume) error {
	if err := os.Remove(PodDevicePath(k.cfg.Dir, uid, m.pvName)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("unmapping pod device: %w", err)
	}
	global := filepath.Join(blockGlobalMapPath(k.cfg.Dir, m.pvName), string(uid))
	if !k.cfg.SkipMountCheck {
		if err := detachFileDevice(global); err != nil {
			return err
		}
	}
	if mounted, _ := mountinfo.Mounted(global); mounted {
		if err := unix.Unmount(global, 0); err != nil {
			return fmt.Errorf("unmounting %s: %w", global, err)
		}
	}
	if err := os.Remove(global); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing %s: %w", global, err)
	}
	callCtx, cancel := k.csiCallContext(ctx)
	defer cancel()
	if _, err := k.nodeClient(m.driverName()).NodeUnpublishVolume(callCtx, &csi.NodeUnpublishVolumeRequest{VolumeId: m.handle, TargetPath: m.target}); err != nil {
		return fmt.Errorf("NodeUnpublishVolume %s: %w", m.pvName, err)
	}
	return nil
}

// tearDownBlockDevice is TearDownDevice: NodeUnstageVolume on driver's
// plugin when the staging path is there, then the volume's directories
// go.
func (k *Kubelet) tearDownBlockDevice(ctx context.Context, driver string, st *stagedVolume) error {
	if _, err := os.Stat(st.path); err == nil {
		callCtx, cancel := k.csiCallContext(ctx)
		_, err := k.nodeClient(driver).NodeUnstageVolume(callCtx, &csi.NodeUnstageVolumeRequest{VolumeId: st.handle, StagingTargetPath: st.path})
		cancel()
		if err != nil {
			return fmt.Errorf("NodeUnstageVolume %s: %w", st.handle, err)
		}
		if err := os.RemoveAll(st.path); err != nil {
			return fmt.Errorf("removing block staging path: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(blockPublishDir(k.cfg.Dir, st.pvName)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing block publish dir: %w", err)
	}
	// The data directory and the empty global map directory.
	return removeUnmountedDir(blockVolumeDir(k.cfg.Dir, st.pvName))
}

// loopDeviceOf finds the loop device backed by path (losetup -j), "" if
// there is none.
func loopDeviceOf(path string) (string, error) {
	out, err := exec.Command("losetup", "-j", path).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup -j %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	dev, _, found := strings.Cut(line, ":")
	if !found {
		return "", nil
	}
	return dev, nil
}

// attachFileDevice puts a loop device on path unless one is there, as the
// kubelet's block volume path handler takes its lock.
func attachFileDevice(path string) error {
	dev, err := loopDeviceOf(path)
	if err != nil || dev != "" {
		return err
	}
	if out, err := exec.Command("losetup", "-f", "--show", path).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -f --show %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// detachFileDevice releases the lock attachFileDevice took.
func detachFileDevice(path string) error {
	dev, err := loopDeviceOf(path)
	if err != nil || dev == "" {
		return err
	}
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -d %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}
