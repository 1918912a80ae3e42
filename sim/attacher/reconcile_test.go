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

// listingController says which nodes each volume is published to, two
// entries a page.
type listingController struct {
	csi.ControllerClient
	published map[string][]string
	pages     int
}

func (l *listingController) ListVolumes(_ context.Context, req *csi.ListVolumesRequest, _ ...grpc.CallOption) (*csi.ListVolumesResponse, error) {
	l.pages++
	ids := []string{"vol-1", "vol-2", "vol-3"}
	start := 0
	if req.StartingToken != "" {
		start = 2
	}
	resp := &csi.ListVolumesResponse{}
	for _, id := range ids[start:min(start+2, len(ids))] {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: &csi.Volume{VolumeId: id},
			Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: l.published[id]}})
	}
	if start == 0 {
		resp.NextToken = "2"
	}
	return resp, nil
}

// listingCapabilities are those the reconciler needs.
var listingCapabilities = driverinfo.Capabilities{
	Plugin: map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
	Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES: true, csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES: true},
}

func TestReconcileForcesAttachmentsOutOfStep(t *testing.T) {
	const driver = "d.example"
	pv := func(name, handle string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}}}}
	}
	va := func(name, pvName string, attached bool) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: "node-1",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
			Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
	}
	objs := []any{
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: "n1"}}}},
		pv("pv-1", "vol-1"), pv("pv-2", "vol-2"), pv("pv-3", "vol-3"),
		va("in-step", "pv-1", true),         // attached, and published
		va("lost-by-backend", "pv-2", true), // attached, but the driver has lost it
		va("not-yet", "pv-3", false),        // attaching, not published yet
	}
	cs := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl := &listingController{published: map[string][]string{"vol-1": {"n1"}}}
	a := New(Config{DriverName: driver, Capabilities: listingCapabilities}, cs, factory, ctrl, controller.RealRuntime())
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *storagev1.CSINode:
			err = factory.Storage().V1().CSINodes().Informer().GetStore().Add(o)
		case *corev1.PersistentVolume:
			err = factory.Core().V1().PersistentVolumes().Informer().GetStore().Add(o)
		case *storagev1.VolumeAttachment:
			err = factory.Storage().V1().VolumeAttachments().Informer().GetStore().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	a.Reconcile(context.Background())

	if ctrl.pages != 2 {
		t.Errorf("ListVolumes called %d times, want both pages", ctrl.pages)
	}
	if n := a.vaQ.Len(); n != 1 {
		t.Fatalf("%d attachments queued, want only lost-by-backend", n)
	}
	item, _ := a.vaQ.Get()
	if item != "lost-by-backend" || !a.consumeForceSync("lost-by-backend") {
		t.Errorf("queued %q (forced: %v), want lost-by-backend forced", item, a.forceSync)
	}
	if a.consumeForceSync("lost-by-backend") {
		t.Error("a forced sync must be used up once consumed")
	}
}
