package provisioner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// --extra-create-metadata and --default-fstype, as the sidecar's
// pkg/controller/controller.go applies them to CreateVolume.
func TestProvisionWithFlags(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		classFS    string
		wantFS     string
		wantParams map[string]string
	}{
		{name: "defaults", wantParams: map[string]string{"kind": "directory"}},
		{name: "extra-create-metadata", cfg: Config{ExtraCreateMetadata: true}, wantParams: map[string]string{"kind": "directory",
			"csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "default", "csi.storage.k8s.io/pv/name": "pvc-u1"}},
		{name: "default-fstype", cfg: Config{DefaultFSType: "xfs"}, wantFS: "xfs", wantParams: map[string]string{"kind": "directory"}},
		{name: "the class's fstype first", cfg: Config{DefaultFSType: "xfs"}, classFS: "ext4", wantFS: "ext4",
			wantParams: map[string]string{"kind": "directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := zonedProvisioner(t, "a")
			p.cfg.Timeout, p.cfg.Capabilities = 1e9, csisimCapabilities
			p.cfg.ExtraCreateMetadata, p.cfg.DefaultFSType = tc.cfg.ExtraCreateMetadata, tc.cfg.DefaultFSType
			ctrl := &recordingController{}
			p.csi, p.client = ctrl, fake.NewClientset()
			p.claims = corelisters.NewPersistentVolumeClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
			class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "drv",
				Parameters: map[string]string{"kind": "directory"}}
			if tc.classFS != "" {
				class.Parameters["csi.storage.k8s.io/fstype"] = tc.classFS
			}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", UID: "u1"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class.Name,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
			pv, err := p.provision(context.Background(), claim, class, "pvc-u1")
			if err != nil {
				t.Fatal(err)
			}
			if len(ctrl.req.Parameters) != len(tc.wantParams) {
				t.Errorf("parameters %v, want %v", ctrl.req.Parameters, tc.wantParams)
			}
			for k, v := range tc.wantParams {
				if ctrl.req.Parameters[k] != v {
					t.Errorf("parameter %s = %q, want %q", k, ctrl.req.Parameters[k], v)
				}
			}
			if got := ctrl.req.VolumeCapabilities[0].GetMount().GetFsType(); got != tc.wantFS || pv.Spec.CSI.FSType != tc.wantFS {
				t.Errorf("fsType %q in the request, %q in the PV; want %q", got, pv.Spec.CSI.FSType, tc.wantFS)
			}
		})
	}
}
