package provisioner

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csisim/csisim/drivers/driverinfo"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// recordingController answers CreateVolume and keeps the request.
type recordingController struct {
	csi.ControllerClient
	req *csi.CreateVolumeRequest
}

func (r *recordingController) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest, _ ...grpc.CallOption) (*csi.CreateVolumeResponse, error) {
	r.req = req
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", CapacityBytes: 1 << 30,
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{zoneKey: "b"}}}}}, nil
}

// csisimCapabilities are those of csisim's driver that provisioning
// looks at: it provisions, with topology, and has SINGLE_NODE_MULTI_WRITER.
var csisimCapabilities = driverinfo.Capabilities{
	Plugin: map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true,
		csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS: true},
	Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME: true,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true, csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER: true},
}

// What the sidecar makes of a class: the request CreateVolume gets and the
// PV it writes.
func TestProvisionFromClass(t *testing.T) {
	p := zonedProvisioner(t, "a", "b")
	p.cfg.Timeout = 1e9
	p.cfg.Capabilities = csisimCapabilities
	ctrl := &recordingController{}
	p.csi, p.client = ctrl, fake.NewClientset()
	p.claims = corelisters.NewPersistentVolumeClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "drv",
		MountOptions: []string{"noatime"},
		Parameters:   map[string]string{"kind": "directory", "csi.storage.k8s.io/fstype": "ext4"},
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: zoneKey, Values: []string{"b"}}}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}

	pv, err := p.provision(context.Background(), claim, class, "pvc-u1")
	if err != nil {
		t.Fatal(err)
	}
	req := ctrl.req
	if len(req.Parameters) != 1 || req.Parameters["kind"] != "directory" {
		t.Errorf("CreateVolume parameters %v, want only kind", req.Parameters)
	}
	mount := req.VolumeCapabilities[0].GetMount()
	if mount.GetFsType() != "ext4" || len(mount.GetMountFlags()) != 1 || mount.GetMountFlags()[0] != "noatime" {
		t.Errorf("CreateVolume capability %v, want fs ext4 and flag noatime", req.VolumeCapabilities[0])
	}
	if got := req.VolumeCapabilities[0].GetAccessMode().GetMode(); got != csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER {
		t.Errorf("ReadWriteOnce asked for as %v, want SINGLE_NODE_MULTI_WRITER (the driver has that capability)", got)
	}
	if got := zonesOf(req.AccessibilityRequirements.GetRequisite()); got != "[b]" {
		t.Errorf("requisite %s, want the allowed zone b", got)
	}
	if pv.Spec.CSI.FSType != "ext4" || len(pv.Spec.MountOptions) != 1 || pv.Spec.MountOptions[0] != "noatime" {
		t.Errorf("PV fsType %q, mountOptions %v", pv.Spec.CSI.FSType, pv.Spec.MountOptions)
	}
	for _, k := range []string{AnnDeletionSecretName, AnnDeletionSecretNamespace} {
		if v, ok := pv.Annotations[k]; !ok || v != "" {
			t.Errorf("annotation %s = %q (present %v), want present and empty", k, v, ok)
		}
	}
	if pv.Spec.NodeAffinity == nil {
		t.Error("the PV should have the volume's topology as node affinity")
	}

	// A block claim: a block capability and no fsType in the PV.
	block := corev1.PersistentVolumeBlock
	claim.Spec.VolumeMode = &block
	pv, err = p.provision(context.Background(), claim, class, "pvc-u1")
	if err != nil {
		t.Fatal(err)
	}
	if ctrl.req.VolumeCapabilities[0].GetBlock() == nil || pv.Spec.CSI.FSType != "" {
		t.Errorf("block: capability %v, PV fsType %q", ctrl.req.VolumeCapabilities[0], pv.Spec.CSI.FSType)
	}

	// A provisioner secret goes to CreateVolume and into the annotations.
	claim.Spec.VolumeMode = nil
	class.Parameters["csi.storage.k8s.io/provisioner-secret-name"] = "s"
	class.Parameters["csi.storage.k8s.io/provisioner-secret-namespace"] = "${pvc.namespace}"
	if _, err := p.client.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Data: map[string][]byte{"token": []byte("t")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv, err = p.provision(context.Background(), claim, class, "pvc-u1")
	if err != nil {
		t.Fatal(err)
	}
	if ctrl.req.Secrets["token"] != "t" || pv.Annotations[AnnDeletionSecretName] != "s" || pv.Annotations[AnnDeletionSecretNamespace] != "default" {
		t.Errorf("secrets %v, annotations %v", ctrl.req.Secrets, pv.Annotations)
	}
}

// A driver that cannot provision gets no CreateVolume: every claim is
// refused in the sidecar's words, as is a source it cannot restore from.
func TestProvisionRefusedByCapabilities(t *testing.T) {
	withController := map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true}
	for _, tc := range []struct {
		name string
		caps driverinfo.Capabilities
		ds   *corev1.ObjectReference
		want string
	}{
		{name: "no controller service", want: "plugin CONTROLLER_SERVICE capability is not reported"},
		{name: "no CREATE_DELETE_VOLUME", caps: driverinfo.Capabilities{Plugin: withController,
			Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true}},
			want: "controller CREATE_DELETE_VOLUME capability is not reported"},
		{name: "a clone without CLONE_VOLUME", caps: csisimCapabilities, ds: &corev1.ObjectReference{Kind: pvcKind, Name: "src"},
			want: "controller CLONE_VOLUME capability is not reported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Provisioner{cfg: Config{DriverName: "drv", Capabilities: tc.caps}}
			err := p.checkDriverCapabilities(tc.ds)
			if err == nil || !strings.Contains(err.Error(), "CSI driver does not support") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkDriverCapabilities: %v, want %q", err, tc.want)
			}
		})
	}
	if err := (&Provisioner{cfg: Config{Capabilities: csisimCapabilities}}).checkDriverCapabilities(nil); err != nil {
		t.Fatalf("a driver that provisions: %v", err)
	}
}
