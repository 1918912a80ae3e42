package provisioner

import (
	"context"
	"maps"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/csisim/csisim/drivers/driverinfo"
)

func TestMutableParameters(t *testing.T) {
	const drv = "hostpath.csisim.io"
	cs := fake.NewClientset(
		&storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: drv, Parameters: map[string]string{"iops": "3000"}},
		&storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, DriverName: "other.example", Parameters: map[string]string{"x": "y"}})
	modify := driverinfo.Capabilities{Controller: map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_MODIFY_VOLUME: true}}
	p := &Provisioner{cfg: Config{DriverName: drv, Capabilities: modify}, client: cs}
	claimOf := func(class string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		if class != "" {
			c.Spec.VolumeAttributesClassName = ptr.To(class)
		}
		return c
	}
	ctx := context.Background()
	if got, err := p.mutableParameters(ctx, claimOf("gold")); err != nil || !maps.Equal(got, map[string]string{"iops": "3000"}) {
		t.Errorf("gold: %v, %v; want its parameters", got, err)
	}
	if got, err := p.mutableParameters(ctx, claimOf("")); err != nil || got != nil {
		t.Errorf("no class: %v, %v; want none", got, err)
	}
	if _, err := p.mutableParameters(ctx, claimOf("missing")); !apierrors.IsNotFound(err) {
		t.Errorf("a class that does not exist: %v, want NotFound", err)
	}
	want := "VAC other referenced in PVC is for driver other.example which does not match driver name " + drv
	if _, err := p.mutableParameters(ctx, claimOf("other")); err == nil || err.Error() != want {
		t.Errorf("another driver's class: %v, want %q", err, want)
	}
	if err := p.checkModifyCapability(claimOf("gold")); err != nil {
		t.Errorf("a driver with MODIFY_VOLUME: %v", err)
	}
	p.cfg.Capabilities = driverinfo.Capabilities{}
	want = "CSI driver does not support VolumeAttributesClass: controller MODIFY_VOLUME capability is not reported"
	if err := p.checkModifyCapability(claimOf("gold")); err == nil || err.Error() != want {
		t.Errorf("a driver without MODIFY_VOLUME: %v, want %q", err, want)
	}
	if err := p.checkModifyCapability(claimOf("")); err != nil {
		t.Errorf("a claim without class, a driver without MODIFY_VOLUME: %v", err)
	}
	if got := volumeAttributesClassName(claimOf("gold")); ptr.Deref(got, "") != "gold" {
		t.Errorf("the PV's class: %v, want gold", got)
	}
}
