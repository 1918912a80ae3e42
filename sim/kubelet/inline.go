package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

// CSI inline ephemeral volumes (pod.spec.volumes[].csi), as the real
// kubelet's CSI plugin sets them up (kubernetes pkg/volume/csi:
// csi_plugin.go, csi_mounter.go): the plugin neither attaches nor
// device-mounts them (CanAttach and CanDeviceMount say no for the
// Ephemeral lifecycle mode), so there is no VolumeAttachment, no
// NodeStageVolume and no volumesInUse entry; SetUp publishes the volume
// straight into the pod's directory under a handle the kubelet makes up,
// and TearDown unpublishes it.

// inlineVolume is one inline CSI volume of a pod.
type inlineVolume struct {
	name   string // the pod volume's name: the volume spec name
	src    *corev1.CSIVolumeSource
	handle string
	unique corev1.UniqueVolumeName
}

// InlineVolumeHandle is the volume handle the kubelet gives an inline
// volume (volumeutil.InlineVolumeHandle).
func InlineVolumeHandle(podUID types.UID, volumeName string) string {
	return volumeutil.InlineVolumeHandle(podUID, volumeName)
}

// inlineUniqueName is the volume manager's name for a volume of a plugin
// that neither attaches nor device-mounts it: <plugin>/<pod UID>-<spec
// name> (kubernetes pkg/volume/util, GetUniqueVolumeNameFromSpecWithPod).
func inlineUniqueName(podUID types.UID, volumeName string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(fmt.Sprintf("%s/%s-%s", csiPluginName, podUID, volumeName))
}

// inlineVolumes are the pod's inline CSI volumes that a container uses.
func inlineVolumes(pod *corev1.Pod) []inlineVolume {
	var out []inlineVolume
	for _, v := range pod.Spec.Volumes {
		if v.CSI == nil || !volumeutil.UsedByContainers(pod, v.Name) {
			continue
		}
		out = append(out, inlineVolume{name: v.Name, src: v.CSI, handle: InlineVolumeHandle(pod.UID, v.Name),
			unique: inlineUniqueName(pod.UID, v.Name)})
	}
	return out
}

// setUpInline publishes the pod's inline volumes (with republish, again
// those whose driver requires it). Each volume is tried whatever the
// others do, as the operation executor runs one operation per volume; the
// first error is returned.
func (k *Kubelet) setUpInline(ctx context.Context, pod *corev1.Pod, republish bool) error {
	var first error
	for _, iv := range inlineVolumes(pod) {
		if republish && !k.requiresRepublish(iv.src.Driver) {
			continue
		}
		if err := k.mountInline(ctx, pod, iv, republish); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// mountInline is mountVolume for an inline volume: a failure backs off
// per volume.
func (k *Kubelet) mountInline(ctx context.Context, pod *corev1.Pod, iv inlineVolume, republish bool) error {
	if wait := k.backoff.remaining(iv.unique, k.clock.Now()); wait > 0 {
		return controller.RequeueAfter(wait)
	}
	if err := k.mountInlineOnce(ctx, pod, iv, republish); err != nil {
		return controller.RequeueAfter(k.backoff.failed(iv.unique, k.clock.Now()))
	}
	k.backoff.reset(iv.unique)
	return nil
}

// setUpFailed records the operation executor's event for a failed SetUp
// (pkg/volume/util/operationexecutor/operation_generator.go: "MountVolume.SetUp
// failed for volume <spec name> : <error>") and returns the error.
func (k *Kubelet) setUpFailed(pod *corev1.Pod, iv inlineVolume, err error) error {
	k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", iv.name, err)
	return fmt.Errorf("volume %s of pod %s/%s: %w", iv.name, pod.Namespace, pod.Name, err)
}

// csiLog prefixes an error as the CSI plugin's log() does.
func csiLog(format string, args ...any) error {
	return fmt.Errorf(csiPluginName+": "+format, args...)
}

func (k *Kubelet) mountInlineOnce(ctx context.Context, pod *corev1.Pod, iv inlineVolume, republish bool) error {
	m := k.actual.mountedVolume(pod.UID, iv.name)
	if m != nil && !m.uncertain && !republish {
		return nil
	}
	src, driver := iv.src, iv.src.Driver
	// SetUpAt's order (csi_mounter.go): the driver's client, its
	// lifecycle modes, then the volume's secrets and attributes.
	if !k.driverRegistered(driver) {
		return k.setUpFailed(pod, iv, csiLog("mounter.SetUpAt failed to get CSI client: driver name %s not found in the list of registered CSI drivers", driver))
	}
	if err := k.supportsEphemeral(driver); err != nil {
		return k.setUpFailed(pod, iv, csiLog("mounter.SetupAt failed to check volume lifecycle mode: %s", err))
	}
	var secrets map[string]string
	if ref := src.NodePublishSecretRef; ref != nil {
		// An inline volume's secret is in the pod's namespace.
		var err error
		if secrets, err = k.secretData(ctx, &corev1.SecretReference{Namespace: pod.Namespace, Name: ref.Name}); err != nil {
			return k.setUpFailed(pod, iv, fmt.Errorf("fetching NodePublishSecretRef %s/%s failed: %v", pod.Namespace, ref.Name, err))
		}
	}
	volumeContext := src.VolumeAttributes
	if k.podInfoOnMount(driver) {
		volumeContext = map[string]string{}
		for key, v := range src.VolumeAttributes {
			volumeContext[key] = v
		}
		for key, v := range podInfo(pod) {
			volumeContext[key] = v
		}
		// The pod information says the volume is ephemeral.
		volumeContext["csi.storage.k8s.io/ephemeral"] = "true"
	}
	// Service account tokens go to inline volumes too (csi_mounter.go, SetUpAt).
	volumeContext, secrets, err := k.withServiceAccountTokens(ctx, pod, driver, volumeContext, secrets)
	if err != nil {
		return k.setUpFailed(pod, iv, err)
	}
	caps, err := k.nodeCapabilities(ctx, driver)
	if err != nil {
		return k.setUpFailed(pod, iv, err)
	}
	fsGroup, changePolicy := podFSGroup(pod)
	delegated := caps[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP]
	fsType := ""
	if src.FSType != nil {
		fsType = *src.FSType
	}
	readOnly := src.ReadOnly != nil && *src.ReadOnly
	mnt := &csi.VolumeCapability_MountVolume{FsType: fsType}
	if delegated && fsGroup != nil {
		mnt.VolumeMountGroup = fmt.Sprint(*fsGroup)
	}
	// An inline volume is always asked for as ReadWriteOnce.
	rwo := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	capability := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: accessMode(rwo, caps)},
		AccessType: &csi.VolumeCapability_Mount{Mount: mnt}}

	dir := podVolumeDir(k.cfg.Dir, pod.UID, iv.name)
	target := filepath.Join(dir, "mount")
	if err := saveVolumeData(dir, map[string]string{
		volDataSpecName: iv.name, volDataHandle: iv.handle, volDataDriver: driver, volDataNode: k.cfg.NodeName,
		volDataAttachment: attachdetach.AttachmentName(iv.handle, driver, k.cfg.NodeName),
		volDataLifecycle:  string(storagev1.VolumeLifecycleEphemeral),
	}); err != nil {
		return k.setUpFailed(pod, iv, csiLog("mounter.SetUpAt failed to save volume info data: %v", err))
	}
	callCtx, cancel := k.csiCallContext(ctx)
	_, err = k.nodeClient(driver).NodePublishVolume(callCtx, &csi.NodePublishVolumeRequest{
		VolumeId: iv.handle, TargetPath: target, VolumeCapability: capability, Readonly: readOnly,
		VolumeContext: volumeContext, Secrets: secrets,
	})
	cancel()
	if err != nil {
		if !isFinalError(err) {
			k.recordInline(pod, iv, target, true)
		}
		return k.setUpFailed(pod, iv, err)
	}
	// The CSI plugin gives an inline volume to the fsGroup as a
	// ReadWriteOnce one (csi_mounter.go, supportsFSGroup).
	if kubeletAppliesFSGroup(fsGroupRequest{FSGroup: fsGroup, Policy: k.fsGroupPolicy(driver), ReadOnly: readOnly,
		FSType: fsType, AccessModes: rwo.Spec.AccessModes, Delegated: delegated}) && !k.nothingMounted(target) {
		if err := setVolumeOwnership(target, *fsGroup, changePolicy, readOnly); err != nil {
			k.recordInline(pod, iv, target, true)
			return k.setUpFailed(pod, iv, fmt.Errorf("applyFSGroup failed for vol %s: %v", iv.handle, err))
		}
	}
	k.recordInline(pod, iv, target, false)
	return nil
}

// recordInline records the inline volume published for the pod in the
// actual state; uncertain: maybe published.
func (k *Kubelet) recordInline(pod *corev1.Pod, iv inlineVolume, target string, uncertain bool) {
	k.actual.markMounted(pod.UID, iv.name, &mountedVolume{unique: iv.unique, pvName: iv.name, handle: iv.handle,
		target: target, uncertain: uncertain, driver: iv.src.Driver})
}

// supportsEphemeral is the CSI plugin's volume lifecycle check for an
// inline volume (csi_mounter.go, supportsVolumeLifecycleMode): the
// CSIDriver must list Ephemeral; without a CSIDriver object only
// persistent volumes are supported.
func (k *Kubelet) supportsEphemeral(driver string) error {
	mode := storagev1.VolumeLifecycleEphemeral
	drv, err := k.drivers.Get(driver)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, driver)
	case err != nil:
		return err
	case slices.Contains(drv.Spec.VolumeLifecycleModes, mode):
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, driver, drv.Spec.VolumeLifecycleModes)
}

// podInfoOnMount reads the CSIDriver's podInfoOnMount.
func (k *Kubelet) podInfoOnMount(driver string) bool {
	drv, err := k.drivers.Get(driver)
	return err == nil && drv.Spec.PodInfoOnMount != nil && *drv.Spec.PodInfoOnMount
}
