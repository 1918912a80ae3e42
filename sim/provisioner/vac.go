package provisioner

import (
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A claim may name a VolumeAttributesClass (spec.volumeAttributesClassName):
// the sidecar creates its volume with the class's parameters as
// mutable_parameters, and names the class in the PV, whose binding then
// sets the claim's status.currentVolumeAttributesClassName (the PV
// controller's part). A later change of the claim's class is the
// external-resizer's (sim/resizer's modify controller).

// checkModifyCapability refuses a claim with a class for a driver that
// cannot modify volumes, after the other capability checks, in the
// sidecar's words (external-provisioner pkg/controller/controller.go
// checkDriverCapabilities).
func (p *Provisioner) checkModifyCapability(claim *corev1.PersistentVolumeClaim) error {
	if attributesClass(claim) != "" && !p.cfg.Capabilities.Controller[csi.ControllerServiceCapability_RPC_MODIFY_VOLUME] {
		return errors.New("CSI driver does not support VolumeAttributesClass: controller MODIFY_VOLUME capability is not reported")
	}
	return nil
}

// mutableParameters are the parameters of the claim's class, read from the
// API server as the sidecar reads it (a GET, no informer), the last thing
// it prepares before CreateVolume: a class that does not exist fails the
// attempt with the API server's NotFound, in its words, and the claim is
// tried again with backoff; a class of another driver fails it as well.
func (p *Provisioner) mutableParameters(ctx context.Context, claim *corev1.PersistentVolumeClaim) (map[string]string, error) {
	name := attributesClass(claim)
	if name == "" {
		return nil, nil
	}
	vac, err := p.client.StorageV1().VolumeAttributesClasses().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if vac.DriverName != p.cfg.DriverName {
		return nil, fmt.Errorf("VAC %s referenced in PVC is for driver %s which does not match driver name %s", name, vac.DriverName, p.cfg.DriverName)
	}
	return vac.Parameters, nil
}

// attributesClass is the class the claim names, "" for none.
func attributesClass(claim *corev1.PersistentVolumeClaim) string {
	return ptr.Deref(claim.Spec.VolumeAttributesClassName, "")
}

// volumeAttributesClassName is the PV's spec.volumeAttributesClassName: the
// claim's class, unset for none.
func volumeAttributesClassName(claim *corev1.PersistentVolumeClaim) *string {
	if name := attributesClass(claim); name != "" {
		return &name
	}
	return nil
}
