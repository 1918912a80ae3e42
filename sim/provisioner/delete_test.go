package provisioner

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/volumeutil"
)

// deletingController records the volumes DeleteVolume is asked to delete.
type deletingController struct {
	csi.ControllerClient
	deleted []string
}

func (d *deletingController) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest, _ ...grpc.CallOption) (*csi.DeleteVolumeResponse, error) {
	d.deleted = append(d.deleted, req.VolumeId)
	return &csi.DeleteVolumeResponse{}, nil
}

func TestHandles(t *testing.T) {
	p := &Provisioner{cfg: Config{DriverName: "drv"}}
	csiPV := func(driver string, ann map[string]string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Annotations: ann},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driver}}}}
	}
	nfs := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}}}
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want bool
	}{
		{"provisioned by the driver", csiPV("drv", map[string]string{storagehelpers.AnnDynamicallyProvisioned: "drv"}), true},
		{"provisioned by another", csiPV("drv", map[string]string{storagehelpers.AnnDynamicallyProvisioned: "other"}), false},
		{"made by hand for the driver", csiPV("drv", nil), true},
		{"made by hand for another driver", csiPV("other", nil), false},
		{"not CSI", nfs, false},
	} {
		if got := p.handles(tc.pv); got != tc.want {
			t.Errorf("%s: handles %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A volume made by hand for the driver, with reclaim policy Delete: bound,
// it gets the finalizer; Released, it is deleted with DeleteVolume.
func TestDeleteVolumeMadeByHand(t *testing.T) {
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "static", Finalizers: []string{"kubernetes.io/pv-protection"}},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "c"}, StorageClassName: "none",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "drv", VolumeHandle: "h"}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	client := fake.NewClientset(pv)
	ctrl := &deletingController{}
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	p := &Provisioner{cfg: Config{DriverName: "drv", Timeout: 1e9, Capabilities: csisimCapabilities}, client: client, csi: ctrl, events: record.NewFakeRecorder(10),
		volumes: corelisters.NewPersistentVolumeLister(volumes),
		classes: storagelisters.NewStorageClassLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		vaIndex: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{volumeutil.AttachmentsByVolume: volumeutil.IndexFunc(volumeutil.AttachmentsByVolume)})}
	sync := func() {
		t.Helper()
		cur, err := client.CoreV1().PersistentVolumes().Get(ctx, "static", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := volumes.Update(cur); err != nil {
			t.Fatal(err)
		}
		if err := p.syncVolume(ctx, "static"); err != nil {
			t.Fatal(err)
		}
	}

	sync()
	cur, err := client.CoreV1().PersistentVolumes().Get(ctx, "static", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kubernetes.io/pv-protection", storagehelpers.PVDeletionProtectionFinalizer}; !slices.Equal(cur.Finalizers, want) {
		t.Errorf("bound: finalizers %v, want %v", cur.Finalizers, want)
	}
	if len(ctrl.deleted) != 0 {
		t.Errorf("bound: DeleteVolume %v, want none", ctrl.deleted)
	}

	cur.Status.Phase = corev1.VolumeReleased
	if _, err := client.CoreV1().PersistentVolumes().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sync()
	if !slices.Equal(ctrl.deleted, []string{"h"}) {
		t.Errorf("released: DeleteVolume %v, want [h]", ctrl.deleted)
	}
	if _, err := client.CoreV1().PersistentVolumes().Get(ctx, "static", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("released: the PV should be deleted, got %v", err)
	}
}

// A volume whose policy becomes Retain loses the finalizer and is kept.
func TestRetainDropsFinalizer(t *testing.T) {
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: []string{storagehelpers.PVDeletionProtectionFinalizer}, Annotations: map[string]string{storagehelpers.AnnDynamicallyProvisioned: "drv"}},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "drv", VolumeHandle: "h"}}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}
	client := fake.NewClientset(pv)
	volumes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := volumes.Add(pv); err != nil {
		t.Fatal(err)
	}
	ctrl := &deletingController{}
	p := &Provisioner{cfg: Config{DriverName: "drv"}, client: client, csi: ctrl, volumes: corelisters.NewPersistentVolumeLister(volumes)}
	if err := p.syncVolume(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	cur, err := client.CoreV1().PersistentVolumes().Get(ctx, "v", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.Finalizers) != 0 || len(ctrl.deleted) != 0 {
		t.Errorf("finalizers %v, DeleteVolume %v; want neither", cur.Finalizers, ctrl.deleted)
	}
}

// A volume still attached is not deleted for a driver that attaches; the
// sidecar of a driver without PUBLISH_UNPUBLISH_VOLUME does not watch
// VolumeAttachments, and has nothing to wait for.
func TestDeleteWaitsForDetachOnlyForADriverThatAttaches(t *testing.T) {
	pvName := "pv-1"
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Storage().V1().VolumeAttachments().Informer()
	if err := volumeutil.AddIndexes(inf, volumeutil.AttachmentsByVolume); err != nil {
		t.Fatal(err)
	}
	vas := inf.GetIndexer()
	if err := vas.Add(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"},
		Spec: storagev1.VolumeAttachmentSpec{NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}}}); err != nil {
		t.Fatal(err)
	}
	noAttach := csisimCapabilities
	noAttach.Controller = map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true}
	for _, tc := range []struct {
		caps driverinfo.Capabilities
		want string
	}{{csisimCapabilities, "node-1"}, {noAttach, ""}} {
		p := &Provisioner{cfg: Config{Capabilities: tc.caps}, vaIndex: vas}
		if got := p.attachedTo(pvName); got != tc.want {
			t.Errorf("attachedTo with controller capabilities %v = %q, want %q", tc.caps.Controller, got, tc.want)
		}
	}
}
