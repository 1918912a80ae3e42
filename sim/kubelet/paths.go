package kubelet

// The kubelet directory's layout for CSI volumes — models the paths of
// kubernetes pkg/volume/csi (csi_mounter.go, csi_attacher.go, csi_block.go)
// and vol_data.json (csi_util.go saveVolumeData).

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// Where the kubelet's CSI volume plugin keeps things under the kubelet
// directory, as the real one lays them out (pkg/volume/csi): the plugin is
// "kubernetes.io/csi", escaped to "kubernetes.io~csi" in pod directories.
const (
	csiPluginName    = "kubernetes.io/csi"
	csiPluginDirName = "kubernetes.io~csi"
	volDataFileName  = "vol_data.json"
)

// The keys of vol_data.json, which the plugin writes next to every mount so
// that a restarted kubelet can tell what a directory holds.
const (
	volDataSpecName   = "specVolID"
	volDataHandle     = "volumeHandle"
	volDataDriver     = "driverName"
	volDataNode       = "nodeName"
	volDataAttachment = "attachmentID"
	volDataLifecycle  = "volumeLifecycleMode"
	// volDataSELinux is the SELinux label a volume was mounted with, kept
	// only when it has one (csi_attacher.go and csi_mounter.go).
	volDataSELinux = "seLinuxMountContext"
)

// RealDir is the real kubelet's root directory. Messages name paths as they
// are on a real node, under it, rather than under the run's temporary
// directory: they read as a real kubelet's, and stay the same from run to
// run.
const RealDir = "/var/lib/kubelet"

// StagingPath is where the kubelet stages a filesystem CSI volume:
// <kubelet dir>/plugins/kubernetes.io/csi/<driver>/<sha256(volume handle)>/globalmount.
func StagingPath(kubeletDir, driver, volumeHandle string) string {
	return filepath.Join(kubeletDir, "plugins", csiPluginName, driver,
		fmt.Sprintf("%x", sha256.Sum256([]byte(volumeHandle))), "globalmount")
}

// podVolumeDir is a pod's directory for one CSI volume, holding its
// vol_data.json and the mount target:
// <kubelet dir>/pods/<pod UID>/volumes/kubernetes.io~csi/<PV name>.
func podVolumeDir(kubeletDir string, uid types.UID, pvName string) string {
	return filepath.Join(podVolumesDir(kubeletDir, uid), pvName)
}

// podVolumesDir holds all of a pod's CSI filesystem volumes.
func podVolumesDir(kubeletDir string, uid types.UID) string {
	return filepath.Join(kubeletDir, "pods", string(uid), "volumes", csiPluginDirName)
}

// PublishPath is where a filesystem volume is published for a pod: the
// "mount" directory in its pod volume directory.
func PublishPath(kubeletDir string, uid types.UID, pvName string) string {
	return filepath.Join(podVolumeDir(kubeletDir, uid, pvName), "mount")
}

// volumeDevicesDir is the CSI plugin's directory for block volumes:
// <kubelet dir>/plugins/kubernetes.io/csi/volumeDevices.
func volumeDevicesDir(kubeletDir string) string {
	return filepath.Join(kubeletDir, "plugins", csiPluginName, "volumeDevices")
}

// BlockStagingPath is the staging path of a block volume:
// plugins/kubernetes.io/csi/volumeDevices/staging/<PV name>.
func BlockStagingPath(kubeletDir, pvName string) string {
	return filepath.Join(volumeDevicesDir(kubeletDir), "staging", pvName)
}

// blockPublishDir holds a block volume's per-pod publish paths.
func blockPublishDir(kubeletDir, pvName string) string {
	return filepath.Join(volumeDevicesDir(kubeletDir), "publish", pvName)
}

// BlockPublishPath is where a block volume is published for one pod:
// plugins/kubernetes.io/csi/volumeDevices/publish/<PV name>/<pod UID>.
func BlockPublishPath(kubeletDir, pvName string, uid types.UID) string {
	return filepath.Join(blockPublishDir(kubeletDir, pvName), string(uid))
}

// blockVolumeDir holds a block volume's data directory and its global map.
func blockVolumeDir(kubeletDir, pvName string) string {
	return filepath.Join(volumeDevicesDir(kubeletDir), pvName)
}

// blockGlobalMapPath is the directory where the device is bind-mounted once
// per pod using it, to keep it open: volumeDevices/<PV name>/dev.
func blockGlobalMapPath(kubeletDir, pvName string) string {
	return filepath.Join(blockVolumeDir(kubeletDir, pvName), "dev")
}

// blockDataDir holds a block volume's vol_data.json.
func blockDataDir(kubeletDir, pvName string) string {
	return filepath.Join(blockVolumeDir(kubeletDir, pvName), "data")
}

// podDeviceDir holds a pod's block devices, symlinks named after the PV:
// pods/<pod UID>/volumeDevices/kubernetes.io~csi.
func podDeviceDir(kubeletDir string, uid types.UID) string {
	return filepath.Join(kubeletDir, "pods", string(uid), "volumeDevices", csiPluginDirName)
}

// PodDevicePath is the device a pod's container gets for a block volume.
func PodDevicePath(kubeletDir string, uid types.UID, pvName string) string {
	return filepath.Join(podDeviceDir(kubeletDir, uid), pvName)
}

// saveVolumeData writes vol_data.json into dir, creating dir.
func saveVolumeData(dir string, data map[string]string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, volDataFileName), raw, 0o640); err != nil {
		return fmt.Errorf("saving volume data: %w", err)
	}
	return nil
}

// loadVolumeData reads the vol_data.json in dir.
func loadVolumeData(dir string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, volDataFileName))
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, volDataFileName), err)
	}
	return data, nil
}
