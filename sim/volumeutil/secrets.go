package volumeutil

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretData reads the secret ref names, for a CSI call's secrets field:
// nil for no reference, an error in the sidecars' words where it cannot
// be read (external-provisioner getCredentials, external-snapshotter
// utils GetCredentials, external-resizer getCredentials).
func SecretData(ctx context.Context, client kubernetes.Interface, ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	secret, err := client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: %v", ref.Name, ref.Namespace, err)
	}
	data := map[string]string{}
	for k, v := range secret.Data {
		data[k] = string(v)
	}
	return data, nil
}
