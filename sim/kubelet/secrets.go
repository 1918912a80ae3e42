package kubelet

// The secrets a CSI volume's PV names for the node plugin
// (spec.csi.nodeStageSecretRef, nodePublishSecretRef): the kubelet reads
// each from the API server when it stages or publishes the volume, and
// passes its data as the call's secrets. A secret it cannot read fails
// the operation, which is retried with the volume's backoff — the volume
// mounts once the secret exists.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secretData reads a secret as the kubelet's CSI plugin does
// (getCredentialsFromSecret, kubernetes pkg/volume/csi/csi_util.go): a GET
// of the secret, its data as strings.
func (k *Kubelet) secretData(ctx context.Context, ref *corev1.SecretReference) (map[string]string, error) {
	secret, err := k.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, csiLog("failed to find the secret %s in the namespace %s with error: %v", ref.Name, ref.Namespace, err)
	}
	out := make(map[string]string, len(secret.Data))
	for key, v := range secret.Data {
		out[key] = string(v)
	}
	return out, nil
}

// nodeStageSecrets are the NodeStageVolume secrets of a filesystem volume
// (MountDevice, kubernetes pkg/volume/csi/csi_attacher.go) or, block, of
// a block volume (stageVolumeForBlock, csi_block.go), each failing in its
// own words.
func (k *Kubelet) nodeStageSecrets(ctx context.Context, pv *corev1.PersistentVolume, block bool) (map[string]string, error) {
	ref := pv.Spec.CSI.NodeStageSecretRef
	if ref == nil {
		return nil, nil
	}
	data, err := k.secretData(ctx, ref)
	switch {
	case err == nil:
		return data, nil
	case block:
		return nil, csiLog("failed to get NodeStageSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
	default:
		return nil, fmt.Errorf("fetching NodeStageSecretRef %s/%s failed: %v", ref.Namespace, ref.Name, err)
	}
}

// nodePublishSecrets are the NodePublishVolume secrets of a filesystem
// volume (SetUpAt, kubernetes pkg/volume/csi/csi_mounter.go) or, block,
// of a block volume (publishVolumeForBlock, csi_block.go).
func (k *Kubelet) nodePublishSecrets(ctx context.Context, pv *corev1.PersistentVolume, block bool) (map[string]string, error) {
	ref := pv.Spec.CSI.NodePublishSecretRef
	if ref == nil {
		return nil, nil
	}
	data, err := k.secretData(ctx, ref)
	switch {
	case err == nil:
		return data, nil
	case block:
		return nil, csiLog("blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
	default:
		return nil, fmt.Errorf("fetching NodePublishSecretRef %s/%s failed: %v", ref.Namespace, ref.Name, err)
	}
}
