package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSecretRef(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team"}}
	for _, tc := range []struct {
		name    string
		params  map[string]string
		want    *corev1.SecretReference
		wantErr string
	}{
		{"none", map[string]string{"kind": "block"}, nil, ""},
		{"fixed", map[string]string{secretNameKey("provisioner"): "s", secretNamespaceKey("provisioner"): "kube-system"},
			&corev1.SecretReference{Name: "s", Namespace: "kube-system"}, ""},
		{"templated", map[string]string{secretNameKey("provisioner"): "${pvc.name}-key", secretNamespaceKey("provisioner"): "${pvc.namespace}"},
			&corev1.SecretReference{Name: "data-key", Namespace: "team"}, ""},
		{"half", map[string]string{secretNameKey("provisioner"): "s"}, nil, "must be set together"},
		{"unknown variable", map[string]string{secretNameKey("provisioner"): "${pvc.uid}", secretNamespaceKey("provisioner"): "x"}, nil,
			"${pvc.uid} is not a template variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := secretRef(tc.params, "provisioner", claim, "pvc-1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("secretRef = %v, want %v", got, tc.want)
			}
		})
	}
}
