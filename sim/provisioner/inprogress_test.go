package provisioner

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// scriptedController answers CreateVolume with the errors it is given, in
// turn, then with a volume; it counts the calls.
type scriptedController struct {
	csi.ControllerClient
	errs  []error
	calls int
}

func (s *scriptedController) CreateVolume(context.Context, *csi.CreateVolumeRequest, ...grpc.CallOption) (*csi.CreateVolumeResponse, error) {
	s.calls++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return nil, err
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", CapacityBytes: 1 << 30}}, nil
}

func (s *scriptedController) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest, ...grpc.CallOption) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{}, nil
}

// provisionOnly are the capabilities of a driver that provisions, without
// topology.
var provisionOnly = driverinfo.Capabilities{
	Plugin:     map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true},
	Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true},
}

// A claim deleted after a failed CreateVolume: after a temporary error the
// sidecar provisions for it all the same (the PV then released and deleted
// by the PV controller and the sidecar), after a final one it forgets it.
func TestClaimDeletedInProgress(t *testing.T) {
	for _, tc := range []struct {
		code    codes.Code
		calls   int  // CreateVolume calls in all
		wantPV  bool // a PV for the deleted claim
		inQueue bool // the claim is still in progress after the first attempt
	}{
		{codes.DeadlineExceeded, 2, true, true},
		{codes.Unavailable, 2, true, true},
		{codes.Aborted, 2, true, true},
		{codes.Canceled, 2, true, true},
		{codes.Internal, 1, false, false},
		{codes.ResourceExhausted, 1, false, false},
		{codes.InvalidArgument, 1, false, false},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			ctx := context.Background()
			class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: "drv"}
			claim := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "u1",
					Annotations: map[string]string{storagehelpers.AnnStorageProvisioner: "drv"}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class.Name,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
			claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{volumeutil.ClaimsByUID: volumeutil.IndexFunc(volumeutil.ClaimsByUID)})
			classes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := claims.Add(claim); err != nil {
				t.Fatal(err)
			}
			if err := classes.Add(class); err != nil {
				t.Fatal(err)
			}
			client := fake.NewClientset()
			ctrl := &scriptedController{errs: []error{status.Error(tc.code, "first attempt")}}
			p := &Provisioner{cfg: Config{DriverName: "drv", Timeout: 1e9, Capabilities: provisionOnly}, client: client, csi: ctrl,
				events: record.NewFakeRecorder(20), claimIndex: claims, claims: corelisters.NewPersistentVolumeClaimLister(claims),
				volumes:   corelisters.NewPersistentVolumeLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
				classes:   storagelisters.NewStorageClassLister(classes),
				capacityQ: controller.NewQueue("capacity"), slow: newSlowRetries(clocktesting.NewFakeClock(metav1.Now().Time))}

			if err := p.syncClaim(ctx, "u1"); err == nil {
				t.Fatal("first attempt: want its error")
			}
			if got := p.inProgress.load("u1") != nil; got != tc.inQueue {
				t.Errorf("in progress after %s: %v, want %v", tc.code, got, tc.inQueue)
			}
			// The claim is deleted; its key comes round again (backoff).
			if err := claims.Delete(claim); err != nil {
				t.Fatal(err)
			}
			if err := p.syncClaim(ctx, "u1"); err != nil {
				t.Fatalf("second attempt: %v", err)
			}
			if ctrl.calls != tc.calls {
				t.Errorf("CreateVolume called %d times, want %d", ctrl.calls, tc.calls)
			}
			pv, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u1", metav1.GetOptions{})
			if gotPV := err == nil; gotPV != tc.wantPV {
				t.Fatalf("PV for the deleted claim: %v (%v), want %v", gotPV, err, tc.wantPV)
			}
			if tc.wantPV && (pv.Spec.ClaimRef.UID != "u1" || pv.Spec.CSI.VolumeHandle != "vol-1") {
				t.Errorf("PV claimRef %v handle %s, want the deleted claim's and vol-1", pv.Spec.ClaimRef, pv.Spec.CSI.VolumeHandle)
			}
			if p.inProgress.load("u1") != nil {
				t.Error("the claim is still in progress after a final answer")
			}
		})
	}
}
