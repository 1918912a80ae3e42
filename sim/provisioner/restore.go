package provisioner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the sidecar reads a claim's data source as, and writes on the
// snapshot it restores from (external-provisioner
// pkg/controller/controller.go).
const (
	snapshotKind = "VolumeSnapshot"
	pvcKind      = "PersistentVolumeClaim"
	// SnapshotSourceFinalizer holds a VolumeSnapshot while a claim is
	// being restored from it: the sidecar adds it before CreateVolume and
	// removes it once the volume is made.
	SnapshotSourceFinalizer = "provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection"
	// annAllowVolumeModeChange on a content lets a restore change the
	// volume mode of the snapshot's source.
	annAllowVolumeModeChange = "snapshot.storage.kubernetes.io/allow-volume-mode-change"
)

// errPopulator: the data source is for an external populator, not for
// the provisioner; the claim is left alone without a failure.
var errPopulator = errors.New("data source is not handled by the provisioner, assuming an external populator will provision it")

// dataSource is what the claim's volume is made from: spec.dataSource, or
// else spec.dataSourceRef, checked as the sidecar checks it before
// anything else; nil for an empty volume.
func (p *Provisioner) dataSource(claim *corev1.PersistentVolumeClaim) (*corev1.ObjectReference, error) {
	ds := &corev1.ObjectReference{Namespace: claim.Namespace}
	switch {
	case claim.Spec.DataSource != nil:
		ds.Kind, ds.Name = claim.Spec.DataSource.Kind, claim.Spec.DataSource.Name
		if g := claim.Spec.DataSource.APIGroup; g != nil {
			ds.APIVersion = *g
		}
	case claim.Spec.DataSourceRef != nil:
		ref := claim.Spec.DataSourceRef
		if ref.Namespace != nil && *ref.Namespace != "" {
			// The CrossNamespaceVolumeDataSource gate is off by default.
			return nil, errors.New("dataSourceRef namespace specified but the CrossNamespaceVolumeDataSource feature is disabled")
		}
		ds.Kind, ds.Name = ref.Kind, ref.Name
		if ref.APIGroup != nil {
			ds.APIVersion = *ref.APIGroup
		}
	default:
		return nil, nil
	}
	if ds.Name == "" {
		return nil, fmt.Errorf("the PVC source not found for PVC %s", claim.Name)
	}
	switch ds.Kind {
	case snapshotKind:
		if ds.APIVersion != snapv1.GroupName {
			return nil, fmt.Errorf("the PVC source does not belong to the right APIGroup. Expected %s, Got %s", snapv1.GroupName, ds.APIVersion)
		}
	case pvcKind:
	default:
		p.events.Event(claim, corev1.EventTypeNormal, "Provisioning", "Assuming an external populator will provision the volume")
		return nil, errPopulator
	}
	return ds, nil
}

// checkDriverCapabilities: the driver provisions at all, and restores
// snapshots, or clones, as the data source needs (external-provisioner
// pkg/controller/controller.go checkDriverCapabilities, in its words).
func (p *Provisioner) checkDriverCapabilities(ds *corev1.ObjectReference) error {
	caps := p.cfg.Capabilities
	switch {
	case !caps.HasControllerService():
		return errors.New("CSI driver does not support dynamic provisioning: plugin CONTROLLER_SERVICE capability is not reported")
	case !caps.Controller[csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME]:
		return errors.New("CSI driver does not support dynamic provisioning: controller CREATE_DELETE_VOLUME capability is not reported")
	case ds == nil:
		return nil
	case ds.Kind == snapshotKind && !caps.Controller[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT]:
		return errors.New("CSI driver does not support snapshot restore: controller CREATE_DELETE_SNAPSHOT capability is not reported")
	case ds.Kind == pvcKind && !caps.Controller[csi.ControllerServiceCapability_RPC_CLONE_VOLUME]:
		return errors.New("CSI driver does not support clone operations: controller CLONE_VOLUME capability is not reported")
	}
	return nil
}

// contentSource is the CSI source of the claim's volume: a snapshot to
// restore, or a claim to clone.
func (p *Provisioner) contentSource(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, ds *corev1.ObjectReference) (*csi.VolumeContentSource, error) {
	var src *csi.VolumeContentSource
	var err error
	if ds.Kind == snapshotKind {
		src, err = p.snapshotSource(ctx, claim, class, ds)
	} else {
		src, err = p.pvcSource(claim, ds.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("error getting handle for DataSource Type %s by Name %s: %v", ds.Kind, ds.Name, err)
	}
	return src, nil
}

// snapshotSource checks the snapshot as the sidecar does, reading it and
// its content from the API server, in its order and words: bound, bound
// to a content of the class's driver that points back at it, ready, with
// a handle, not smaller than the claim, of the claim's volume mode.
func (p *Provisioner) snapshotSource(ctx context.Context, claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, ds *corev1.ObjectReference) (*csi.VolumeContentSource, error) {
	if p.cfg.Snapshots == nil {
		return nil, fmt.Errorf("error getting snapshot %s from api server: no client of the snapshot API", ds.Name)
	}
	snap, err := p.cfg.Snapshots.SnapshotV1().VolumeSnapshots(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error getting snapshot %s from api server: %v", ds.Name, err)
	}
	if snap.DeletionTimestamp != nil && !slices.Contains(snap.Finalizers, SnapshotSourceFinalizer) {
		return nil, fmt.Errorf("snapshot %s is being deleted", ds.Name)
	}
	if snap.Status == nil || snap.Status.BoundVolumeSnapshotContentName == nil {
		return nil, fmt.Errorf("snapshot %s not bound", ds.Name)
	}
	contentName := *snap.Status.BoundVolumeSnapshotContentName
	content, err := p.cfg.Snapshots.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error getting snapshotcontent %s for snapshot %s", contentName, ds.Name)
	}
	r := content.Spec.VolumeSnapshotRef
	if r.UID != snap.UID || r.Namespace != snap.Namespace || r.Name != snap.Name {
		return nil, fmt.Errorf("snapshotcontent %s for snapshot %s is bound to a different snapshot", contentName, ds.Name)
	}
	if content.Spec.Driver != class.Provisioner {
		return nil, fmt.Errorf("snapshotcontent %s for snapshot %s is not handled by CSI driver of StorageClass %s", contentName, ds.Name, class.Name)
	}
	if snap.Status.ReadyToUse == nil || !*snap.Status.ReadyToUse {
		return nil, fmt.Errorf("snapshot %s is not Ready", ds.Name)
	}
	if content.Status == nil || content.Status.SnapshotHandle == nil {
		return nil, fmt.Errorf("snapshot handle %s is not available", ds.Name)
	}
	if size := snap.Status.RestoreSize; size != nil {
		want, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		if !ok {
			return nil, fmt.Errorf("error getting capacity for PVC %s when creating snapshot %s", claim.Name, snap.Name)
		}
		if want.Value() < size.Value() {
			return nil, fmt.Errorf("requested volume size %d is less than the size %d for the source snapshot %s", want.Value(), size.Value(), snap.Name)
		}
	}
	// --prevent-volume-mode-conversion is on by default.
	if from, to := content.Spec.SourceVolumeMode, claim.Spec.VolumeMode; from != nil && to != nil && *from != *to {
		allow, ok := content.Annotations[annAllowVolumeModeChange]
		prefix := fmt.Sprintf("requested volume %s/%s modifies the mode of the source volume but does not have permission to do so. ", claim.Namespace, claim.Name)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s%s annotation is not present on snapshotcontent %s", prefix, annAllowVolumeModeChange, content.Name)
		case allow != "true" && allow != "1" && allow != "t" && allow != "T" && allow != "TRUE" && allow != "True":
			return nil, fmt.Errorf("%s%s is set to false on snapshotcontent %s", prefix, annAllowVolumeModeChange, content.Name)
		}
	}
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: *content.Status.SnapshotHandle}}}, nil
}

// protectSnapshotSource adds the sidecar's finalizer to the snapshot a
// claim is restored from.
func (p *Provisioner) protectSnapshotSource(ctx context.Context, namespace, name string) error {
	snap, err := p.cfg.Snapshots.SnapshotV1().VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if slices.Contains(snap.Finalizers, SnapshotSourceFinalizer) {
		return nil
	}
	next := snap.DeepCopy()
	next.Finalizers = append(next.Finalizers, SnapshotSourceFinalizer)
	_, err = p.cfg.Snapshots.SnapshotV1().VolumeSnapshots(namespace).Update(ctx, next, metav1.UpdateOptions{})
	return err
}

// releaseSnapshotSource removes the finalizer once the volume is made; a
// failure is only logged by the sidecar, so it is ignored here.
func (p *Provisioner) releaseSnapshotSource(ctx context.Context, claim *corev1.PersistentVolumeClaim) {
	ds := claim.Spec.DataSource
	if ds == nil || ds.Kind != snapshotKind || p.cfg.Snapshots == nil {
		return
	}
	snaps := p.cfg.Snapshots.SnapshotV1().VolumeSnapshots(claim.Namespace)
	snap, err := snaps.Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil || !slices.Contains(snap.Finalizers, SnapshotSourceFinalizer) {
		return
	}
	next := snap.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == SnapshotSourceFinalizer })
	if _, err := snaps.Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return
	}
}
