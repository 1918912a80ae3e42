package attacher

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
)

// failingController fails every call: the trivial handler must make none.
type failingController struct{ csi.ControllerClient }

func TestTrivialHandlerMarksAttachedWithoutTheDriver(t *testing.T) {
	const driver = "nfs.example.com"
	pvName := "pv-1"
	va := func(name string, status storagev1.VolumeAttachmentStatus) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
			Status: status}
	}
	for _, tc := range []struct {
		name string
		caps driverinfo.Capabilities
		va   *storagev1.VolumeAttachment
		want string // the status patch, "" for none
	}{
		{name: "no PUBLISH_UNPUBLISH_VOLUME", va: va("new", storagev1.VolumeAttachmentStatus{}), want: `{"status":{"attached":true}}`,
			caps: driverinfo.Capabilities{Plugin: map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
				Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true}}},
		{name: "no CONTROLLER_SERVICE", va: va("new", storagev1.VolumeAttachmentStatus{}), want: `{"status":{"attached":true}}`},
		{name: "an old error and metadata are cleared", want: `{"status":{"attachError":null,"attached":true,"attachmentMetadata":null}}`,
			va: va("old", storagev1.VolumeAttachmentStatus{AttachmentMetadata: map[string]string{"k": "v"}, AttachError: &storagev1.VolumeError{Message: "x"}})},
		{name: "attached already", va: va("done", storagev1.VolumeAttachmentStatus{Attached: true})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.va)
			var patches []string
			cs.PrependReactor("patch", "volumeattachments", func(action k8stesting.Action) (bool, runtime.Object, error) {
				p := action.(k8stesting.PatchAction)
				patches = append(patches, p.GetSubresource()+" "+string(p.GetPatch()))
				return false, nil, nil
			})
			factory := informers.NewSharedInformerFactory(cs, 0)
			a := New(Config{DriverName: driver, Capabilities: tc.caps}, cs, factory, failingController{}, controller.RealRuntime())
			if err := factory.Storage().V1().VolumeAttachments().Informer().GetStore().Add(tc.va); err != nil {
				t.Fatal(err)
			}
			var sync controller.Worker
			for _, w := range a.Workers() {
				if w.Name == "attacher-va" {
					sync = w
				}
			}
			if err := sync.Sync(context.Background(), tc.va.Name); err != nil {
				t.Fatal(err)
			}
			want := []string(nil)
			if tc.want != "" {
				want = []string{"status " + tc.want}
			}
			got, _ := json.Marshal(patches)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				t.Fatalf("patches %s, want %s", got, wantJSON)
			}
			after, err := cs.StorageV1().VolumeAttachments().Get(context.Background(), tc.va.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Finalizers) > 0 || !after.Status.Attached {
				t.Fatalf("finalizers %v, attached %v: want none, and attached", after.Finalizers, after.Status.Attached)
			}
			if a.reconciles() {
				t.Fatal("the trivial handler reconciles nothing")
			}
		})
	}
}
