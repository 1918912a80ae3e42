// Package apifaults holds the faults a scenario backend can inject through
// the Kubernetes API alone, so that the simulator, the real control plane
// and a real cluster inject them the same way.
package apifaults

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/sim/attachdetach"
)

// StaleVolumeAttachment creates, as an outsider and not as the
// attach/detach controller, the VolumeAttachment the controller would make
// for the claim's volume on node — what a controller that has lost track
// of an attachment leaves behind. The external-attacher attaches it; a
// running attach/detach controller does not know it, as the real one
// learns attachments only from its own operations and when it starts.
// announce, if set, is called with the VolumeAttachment's name
// (csi-<sha256>) just before it is created, for a timeline to show the
// fault before its write.
func StaleVolumeAttachment(ctx context.Context, cs kubernetes.Interface, namespace, claimName, node string, announce func(name string)) error {
	pv, err := ClaimVolume(ctx, cs, namespace, claimName)
	if err != nil {
		return err
	}
	name := attachdetach.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, node)
	pvName := pv.Name
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: pv.Spec.CSI.Driver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
	}
	if announce != nil {
		announce(name)
	}
	if _, err := cs.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating VolumeAttachment %s: %w", name, err)
	}
	return nil
}

// ClaimVolume is the CSI volume a claim is bound to (namespace "" is
// "default"): what the faults that act on a claim's volume act on. A claim
// not bound yet, or bound to a volume of no CSI driver, is an error that
// says so.
func ClaimVolume(ctx context.Context, cs kubernetes.Interface, namespace, claimName string) (*corev1.PersistentVolume, error) {
	if namespace == "" {
		namespace = "default"
	}
	claim, err := cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", namespace, claimName, err)
	}
	if claim.Spec.VolumeName == "" {
		return nil, fmt.Errorf("claim %s/%s is not bound to a volume yet; wait for it first", namespace, claimName)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("volume of claim %s/%s: %w", namespace, claimName, err)
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Errorf("volume %s of claim %s/%s is not a CSI volume", pv.Name, namespace, claimName)
	}
	return pv, nil
}
