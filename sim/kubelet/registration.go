package kubelet

// The node plugin's registration — models kubernetes
// pkg/kubelet/pluginmanager (the plugin watcher's RegisterPlugin and
// DeRegisterPlugin for CSI) and pkg/volume/csi/nodeinfomanager (the
// CSINode entry and the Node's nodeid annotation).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/csisim/csisim/sim/csiclient"
)

// annNodeID is the Node annotation with each registered driver's node ID
// (pkg/volume/csi/nodeinfomanager).
const annNodeID = "csi.volume.kubernetes.io/nodeid"

// RegisterDriver registers the node plugin, as the kubelet's plugin
// manager does when node-driver-registrar's registration socket appears:
// GetPluginInfo and NodeGetInfo, then the driver's entry in the CSINode and
// its node ID and topology on the Node.
func (k *Kubelet) RegisterDriver(ctx context.Context, identity csi.IdentityClient) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	info, err := identity.GetPluginInfo(callCtx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return fmt.Errorf("node %s: registering CSI plugin: GetPluginInfo: %w", k.cfg.NodeName, err)
	}
	if info.GetName() != k.cfg.DriverName {
		return fmt.Errorf("node %s: the node plugin says its name is %q, expected %q", k.cfg.NodeName, info.GetName(), k.cfg.DriverName)
	}
	nodeInfo, err := k.csi.NodeGetInfo(callCtx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return fmt.Errorf("node %s: registering CSI plugin %s: NodeGetInfo: %w", k.cfg.NodeName, info.GetName(), err)
	}
	if err := k.registerDriver(ctx, nodeInfo); err != nil {
		return err
	}
	// Pods waiting for the driver are not taken up at once: the volume
	// manager tries each operation again when its backoff has passed.
	k.mu.Lock()
	k.unregistered = false
	k.mu.Unlock()
	k.syncCSINodeUpdater(k.cfg.DriverName)
	return nil
}

// UnregisterDriver is what the kubelet does when the plugin's registration
// socket goes away (its node plugin pod is gone, or never came): it
// forgets the driver, so mounts of its volumes fail with "driver name …
// not found in the list of registered CSI drivers", and removes the
// driver's entry from the CSINode and its node ID from the Node's
// annotation, as nodeinfomanager.UninstallCSIDriver does. The topology
// labels stay on the Node, as they do on a real one.
func (k *Kubelet) UnregisterDriver(ctx context.Context) error {
	k.mu.Lock()
	k.unregistered = true
	k.mu.Unlock()
	k.syncCSINodeUpdater(k.cfg.DriverName)
	name := k.cfg.DriverName
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := k.client.StorageV1().CSINodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == name })
		if i < 0 {
			return nil
		}
		cn.Spec.Drivers = slices.Delete(cn.Spec.Drivers, i, i+1)
		_, err = k.client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: removing driver %s from CSINode: %w", k.cfg.NodeName, name, err)
	}
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", k.cfg.NodeName, err)
	}
	ids := map[string]string{}
	if v := node.Annotations[annNodeID]; v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return fmt.Errorf("node %s: annotation %s: %w", k.cfg.NodeName, annNodeID, err)
		}
	}
	if _, ok := ids[name]; !ok {
		return nil
	}
	delete(ids, name)
	// A JSON merge patch: null removes the annotation when no driver is
	// left.
	var value any
	if len(ids) > 0 {
		b, _ := json.Marshal(ids)
		value = string(b)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{annNodeID: value}}})
	if _, err := k.client.CoreV1().Nodes().Patch(ctx, k.cfg.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node %s: removing driver %s from annotation %s: %w", k.cfg.NodeName, name, annNodeID, err)
	}
	return nil
}

// driverRegistered reports whether the kubelet knows the driver: the
// plugin watcher registered it and it has not gone away since.
func (k *Kubelet) driverRegistered(driver string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return driver == k.cfg.DriverName && !k.unregistered
}

// installInCSINode puts the driver's entry into the existing CSINode,
// replacing an earlier one of the same driver.
func (k *Kubelet) installInCSINode(ctx context.Context, drv storagev1.CSINodeDriver) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := k.client.StorageV1().CSINodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == drv.Name })
		switch {
		case i >= 0 && apiequality.Semantic.DeepEqual(cn.Spec.Drivers[i], drv):
			return nil // as the real kubelet, no write when nothing changed
		case i >= 0:
			cn.Spec.Drivers[i] = drv
		default:
			cn.Spec.Drivers = append(cn.Spec.Drivers, drv)
		}
		_, err = k.client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}

// The annotation with which the kubelet's node info manager lists, on the
// CSINode, the in-tree volume plugins whose volumes it hands to CSI drivers
// (pkg/volume/csi/nodeinfomanager; the set is v1.37's: every migration is
// on and its in-tree plugin gone).
const (
	annMigratedPlugins = "storage.alpha.kubernetes.io/migrated-plugins"
	migratedPlugins    = "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder," +
		"kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume"
)
