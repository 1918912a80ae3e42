package attacher

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
)

// publishingController records the publish and unpublish calls it gets.
type publishingController struct {
	csi.ControllerClient
	published   []*csi.ControllerPublishVolumeRequest
	unpublished []*csi.ControllerUnpublishVolumeRequest
}

func (p *publishingController) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest, _ ...grpc.CallOption) (*csi.ControllerPublishVolumeResponse, error) {
	p.published = append(p.published, req)
	return &csi.ControllerPublishVolumeResponse{}, nil
}

func (p *publishingController) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest, _ ...grpc.CallOption) (*csi.ControllerUnpublishVolumeResponse, error) {
	p.unpublished = append(p.unpublished, req)
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// TestInlineVolumeSpec: an attachment of a pod's migrated inline volume
// (spec.source.inlineVolumeSpec, no PV) is published and unpublished with
// the translated volume's handle, attributes and capability, as the
// sidecar takes them from the spec, and no PV is written; a source with
// neither or both, or a spec without a CSI source, fails with the
// sidecar's words.
func TestInlineVolumeSpec(t *testing.T) {
	const driver = "ebs.csi.aws.com"
	fs := corev1.PersistentVolumeFilesystem
	spec := &corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: &fs,
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-1",
			FSType: "ext4", VolumeAttributes: map[string]string{"partition": "0"}}}}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: spec}}}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: "n1"}}}}
	cs := fake.NewClientset(va)
	factory := informers.NewSharedInformerFactory(cs, 0)
	if err := factory.Storage().V1().CSINodes().Informer().GetStore().Add(csiNode); err != nil {
		t.Fatal(err)
	}
	if err := factory.Storage().V1().VolumeAttachments().Informer().GetStore().Add(va); err != nil {
		t.Fatal(err)
	}
	ctrl := &publishingController{}
	caps := driverinfo.Capabilities{
		Plugin:     map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
		Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true}}
	a := New(Config{DriverName: driver, Capabilities: caps}, cs, factory, ctrl, controller.RealRuntime())

	if err := a.syncAttachment(context.Background(), va.Name); err != nil {
		t.Fatalf("attach: %v", err)
	}
	if len(ctrl.published) != 1 {
		t.Fatalf("%d ControllerPublishVolume calls", len(ctrl.published))
	}
	req := ctrl.published[0]
	if req.VolumeId != "vol-1" || req.NodeId != "n1" || req.VolumeContext["partition"] != "0" ||
		req.VolumeCapability.GetMount().GetFsType() != "ext4" ||
		req.VolumeCapability.GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
		t.Errorf("ControllerPublishVolume %v", req)
	}
	for _, act := range cs.Actions() {
		if act.GetResource().Resource == "persistentvolumes" {
			t.Errorf("a PV was asked for: %v", act)
		}
	}
	got, err := cs.StorageV1().VolumeAttachments().Get(context.Background(), va.Name, metav1.GetOptions{})
	if err != nil || !got.Status.Attached {
		t.Fatalf("attachment after attach: %+v, %v", got, err)
	}
	if err := a.detach(context.Background(), got); err != nil {
		t.Fatalf("detach: %v", err)
	}
	if len(ctrl.unpublished) != 1 || ctrl.unpublished[0].VolumeId != "vol-1" || ctrl.unpublished[0].NodeId != "n1" {
		t.Errorf("ControllerUnpublishVolume %v", ctrl.unpublished)
	}

	pvName := "pv"
	for _, tc := range []struct {
		src  storagev1.VolumeAttachmentSource
		want string
	}{
		{storagev1.VolumeAttachmentSource{}, "neither InlineCSIVolumeSource nor PersistentVolumeName specified in VA source"},
		{storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName, InlineVolumeSpec: spec}, "both InlineCSIVolumeSource and PersistentVolumeName specified in VA source"},
		{storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}}, "inline volume spec contains nil CSI source"},
	} {
		if _, err := a.volumeOf(&storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: tc.src}}); err == nil || err.Error() != tc.want {
			t.Errorf("volumeOf(%+v) = %v, want %q", tc.src, err, tc.want)
		}
	}
}
