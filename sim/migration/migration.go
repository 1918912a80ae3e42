// Package migration is CSI migration as v1.37's components do it: a
// PersistentVolume or StorageClass written for an in-tree volume plugin
// whose migration is on (all of csi-translation-lib's: aws-ebs, gce-pd,
// azure-disk, azure-file, cinder, vsphere-volume, portworx-volume — GA and
// locked on, their in-tree code gone) is handed to the CSI driver it
// migrated to, translated by k8s.io/csi-translation-lib, the library the
// real kube-controller-manager, kubelet and sidecars use
// (kubernetes pkg/volume/csimigration/plugin_manager.go:
// IsMigrationEnabledForPlugin and IsMigrationCompleteForPlugin are true
// for each of them, so no component looks at the node first). The other
// in-tree plugins a storage story meets (rbd, cephfs, glusterfs, ...) were
// removed without a migration: no component can handle their volumes.
//
// It is a leaf: the simulated components import it, it imports none of
// them.
package migration

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
)

var translator = csitrans.New()

// PV returns pv as its migrated driver's CSI volume, and true, when it is
// written in the form of an in-tree plugin whose migration is on; pv
// itself, and false, otherwise. pv is not changed.
func PV(pv *corev1.PersistentVolume) (*corev1.PersistentVolume, bool, error) {
	if pv == nil || !translator.IsPVMigratable(pv) {
		return pv, false, nil
	}
	out, err := translator.TranslateInTreePVToCSI(klog.Background(), pv) // it translates a copy
	if err != nil {
		return nil, true, err
	}
	return out, true, nil
}

// CSIPV returns pv as its migrated driver's CSI volume when it is an
// in-tree one, else pv itself; nil when the translation fails (the
// components that use it skip a volume they cannot resolve).
func CSIPV(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	out, _, err := PV(pv)
	if err != nil {
		return nil
	}
	return out
}

// PluginOf names the in-tree plugin of a PV written in the form of a
// plugin whose migration is on (kubernetes.io/aws-ebs) and the CSI driver
// it migrated to, as the expand controller asks before handing the claim
// to an external resizer; ok is false for any other PV.
func PluginOf(pv *corev1.PersistentVolume) (plugin, driver string, ok bool) {
	if pv == nil || !translator.IsPVMigratable(pv) {
		return "", "", false
	}
	plugin, err := translator.GetInTreePluginNameFromSpec(pv, nil)
	if err != nil {
		return "", "", false
	}
	driver, ok = DriverFor(plugin)
	return plugin, driver, ok
}

// DriverFor is the CSI driver an in-tree plugin (kubernetes.io/aws-ebs)
// migrated to, and whether it did.
func DriverFor(inTreePlugin string) (string, bool) {
	if !translator.IsMigratableIntreePluginByName(inTreePlugin) {
		return "", false
	}
	name, err := translator.GetCSINameFromInTreeName(inTreePlugin)
	return name, err == nil
}

// PluginFor is the in-tree plugin a CSI driver took over (ebs.csi.aws.com:
// kubernetes.io/aws-ebs), and whether it took one over.
func PluginFor(driver string) (string, bool) {
	if !translator.IsMigratedCSIDriverByName(driver) {
		return "", false
	}
	name, err := translator.GetInTreeNameFromCSIName(driver)
	return name, err == nil
}

// StorageClass is an in-tree plugin's class as its migrated driver's
// (parameters and topology translated), as external-provisioner reads it.
func StorageClass(plugin string, sc *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	return translator.TranslateInTreeStorageClassToCSI(klog.Background(), plugin, sc) // a copy
}

// ToInTree is a CSI volume of a migrated driver written back in its
// in-tree plugin's form, as external-provisioner writes the volumes it
// provisions for an in-tree class.
func ToInTree(pv *corev1.PersistentVolume) (*corev1.PersistentVolume, error) {
	return translator.TranslateCSIPVToInTree(pv) // a copy
}

// Inline returns a pod's inline volume as its migrated driver's CSI
// volume, and true, when it is written in the form of an in-tree plugin
// whose migration is on: a PV that no API server holds, named
// <driver>-<volume ID> by csi-translation-lib (the name the kubelet's
// volume directories and the attach/detach controller's events use), with
// the access mode and the Filesystem volume mode the library gives an
// inline volume. It is nil, and false, for any other volume; v is not
// changed. As the real populators do (kubernetes
// pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go
// createVolumeSpec, pkg/controller/volume/attachdetach/util/util.go
// CreateVolumeSpec; pkg/volume/csimigration TranslateInTreeSpecToCSI):
// every such plugin's migration is complete in v1.37, so no node is asked.
func Inline(v *corev1.Volume, namespace string) (*corev1.PersistentVolume, bool, error) {
	if v == nil || !translator.IsInlineMigratable(v) {
		return nil, false, nil
	}
	pv, err := translator.TranslateInTreeInlineVolumeToCSI(klog.Background(), v.DeepCopy(), namespace)
	if err != nil {
		return nil, true, fmt.Errorf("failed to translate in-tree pv to CSI: %v", err)
	}
	return pv, true, nil
}

// removedPlugins are the in-tree plugins v1.37 no longer has and that had
// no migration, in the order removed takes their volume sources.
var removedPlugins = [...]string{"kubernetes.io/rbd", "kubernetes.io/cephfs", "kubernetes.io/glusterfs", "kubernetes.io/flocker",
	"kubernetes.io/quobyte", "kubernetes.io/scaleio", "kubernetes.io/storageos", "kubernetes.io/photon-pd"}

// removed names the plugin of the first source that is set, "" if none.
func removed(set ...bool) string {
	for i, ok := range set {
		if ok {
			return removedPlugins[i]
		}
	}
	return ""
}

// Removed names the in-tree plugin of a volume whose plugin v1.37 no
// longer has and that has no migration ("" otherwise): the kubelet finds
// no plugin for it.
func Removed(pv *corev1.PersistentVolume) string {
	s := pv.Spec.PersistentVolumeSource
	return removed(s.RBD != nil, s.CephFS != nil, s.Glusterfs != nil, s.Flocker != nil,
		s.Quobyte != nil, s.ScaleIO != nil, s.StorageOS != nil, s.PhotonPersistentDisk != nil)
}

// RemovedInline is Removed for a pod's inline volume: the kubelet finds no
// plugin for it, and the attach/detach controller no attachable one.
func RemovedInline(v *corev1.Volume) string {
	s := v.VolumeSource
	return removed(s.RBD != nil, s.CephFS != nil, s.Glusterfs != nil, s.Flocker != nil,
		s.Quobyte != nil, s.ScaleIO != nil, s.StorageOS != nil, s.PhotonPersistentDisk != nil)
}
