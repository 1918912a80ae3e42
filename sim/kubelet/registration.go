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
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// annNodeID is the Node annotation with each registered driver's node ID
// (pkg/volume/csi/nodeinfomanager).
const annNodeID = "csi.volume.kubernetes.io/nodeid"

// nodePlugin is a node plugin of the node: the driver it serves and the
// kubelet's client of its node service.
type nodePlugin struct {
	driver string
	csi    csi.NodeClient
	// unregistered: its registration went away (UnregisterDriver) and it
	// has not registered again.
	unregistered bool
}

// AddDriver gives the kubelet the node plugin of another CSI driver, as
// a second node-driver-registrar on the node does; RegisterDriver then
// registers it. A node runs the plugins of every driver of the cluster.
func (k *Kubelet) AddDriver(driver string, node csi.NodeClient) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.plugins = append(k.plugins, &nodePlugin{driver: driver, csi: node})
}

// plugin is the node plugin of driver, or nil if the node has none.
func (k *Kubelet) plugin(driver string) *nodePlugin {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.plugins {
		if p.driver == driver {
			return p
		}
	}
	return nil
}

// nodeClient is the client of driver's node plugin, as the kubelet's CSI
// plugin picks the client by the volume's driver; a driver without a
// plugin here gets the first one's, whose driver then answers (a call the
// kubelet makes only after driverRegistered, or to clean up).
func (k *Kubelet) nodeClient(driver string) csi.NodeClient {
	if p := k.plugin(driver); p != nil {
		return p.csi
	}
	return k.plugins[0].csi
}

// drivers are the drivers of the node's plugins, in order.
func (k *Kubelet) driverNames() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]string, len(k.plugins))
	for i, p := range k.plugins {
		out[i] = p.driver
	}
	return out
}

// RegisterDriver registers the node plugin of driver, as the kubelet's
// plugin manager does when node-driver-registrar's registration socket
// appears: GetPluginInfo and NodeGetInfo, then the driver's entry in the
// CSINode and its node ID and topology on the Node.
func (k *Kubelet) RegisterDriver(ctx context.Context, driver string, identity csi.IdentityClient) error {
	p := k.plugin(driver)
	if p == nil {
		return fmt.Errorf("node %s: no node plugin of driver %s", k.cfg.NodeName, driver)
	}
	callCtx, cancel := k.csiCallContext(ctx)
	defer cancel()
	info, err := identity.GetPluginInfo(callCtx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return fmt.Errorf("node %s: registering CSI plugin: GetPluginInfo: %w", k.cfg.NodeName, err)
	}
	if info.GetName() != driver {
		return fmt.Errorf("node %s: the node plugin says its name is %q, expected %q", k.cfg.NodeName, info.GetName(), driver)
	}
	nodeInfo, err := p.csi.NodeGetInfo(callCtx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return fmt.Errorf("node %s: registering CSI plugin %s: NodeGetInfo: %w", k.cfg.NodeName, info.GetName(), err)
	}
	if err := k.registerDriver(ctx, driver, nodeInfo); err != nil {
		return err
	}
	// Pods waiting for the driver are not taken up at once: the volume
	// manager tries each operation again when its backoff has passed.
	k.mu.Lock()
	p.unregistered = false
	k.mu.Unlock()
	k.syncCSINodeUpdater(driver)
	return nil
}

// UnregisterDriver is what the kubelet does when the registration socket
// of driver's plugin goes away (its node plugin pod is gone, or never
// came): it forgets the driver, so mounts of its volumes fail with "driver
// name … not found in the list of registered CSI drivers", and removes
// the driver's entry from the CSINode and its node ID from the Node's
// annotation, as nodeinfomanager.UninstallCSIDriver does. The topology
// labels stay on the Node, as they do on a real one.
func (k *Kubelet) UnregisterDriver(ctx context.Context, driver string) error {
	if p := k.plugin(driver); p != nil {
		k.mu.Lock()
		p.unregistered = true
		k.mu.Unlock()
	}
	name := driver
	k.syncCSINodeUpdater(driver)
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
	ids, err := nodeIDs(node)
	if err != nil {
		return err
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

// nodeIDs is the Node's annotation of the registered drivers' node IDs,
// by driver; empty if it has none.
func nodeIDs(node *corev1.Node) (map[string]string, error) {
	ids := map[string]string{}
	if v := node.Annotations[annNodeID]; v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return nil, fmt.Errorf("node %s: annotation %s: %w", node.Name, annNodeID, err)
		}
	}
	return ids, nil
}

// driverRegistered reports whether the kubelet knows the driver: the
// plugin watcher registered it and it has not gone away since.
func (k *Kubelet) driverRegistered(driver string) bool {
	p := k.plugin(driver)
	k.mu.Lock()
	defer k.mu.Unlock()
	return p != nil && !p.unregistered
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
