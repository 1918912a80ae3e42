package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSecretRef(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team",
		Annotations: map[string]string{"team/key": "k1"}}}
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
		{"deprecated key", map[string]string{"csiProvisionerSecretName": "s", "csiProvisionerSecretNamespace": "x"},
			&corev1.SecretReference{Name: "s", Namespace: "x"}, ""},
		{"default secret", map[string]string{"csi.storage.k8s.io/secret-name": "d", "csi.storage.k8s.io/secret-namespace": "x"},
			&corev1.SecretReference{Name: "d", Namespace: "x"}, ""},
		{"annotation", map[string]string{secretNameKey("provisioner"): "${pvc.annotations['team/key']}", secretNamespaceKey("provisioner"): "x"},
			&corev1.SecretReference{Name: "k1", Namespace: "x"}, ""},
		{"half", map[string]string{secretNameKey("provisioner"): "s"}, nil,
			"failed to get name and namespace template from params: either name and namespace for Provisioner secrets specified, Both must be specified"},
		{"both keys", map[string]string{secretNameKey("provisioner"): "s", "csiProvisionerSecretName": "t", secretNamespaceKey("provisioner"): "x"}, nil,
			`Provisioner secrets specified in parameters with both "csi" and "csi.storage.k8s.io/" keys`},
		{"unknown variable", map[string]string{secretNameKey("provisioner"): "${pvc.uid}", secretNamespaceKey("provisioner"): "x"}, nil,
			`error resolving value "${pvc.uid}": invalid tokens: ["pvc.uid"]`},
		{"claim name in the namespace", map[string]string{secretNameKey("provisioner"): "s", secretNamespaceKey("provisioner"): "${pvc.name}"}, nil,
			`invalid tokens: ["pvc.name"]`},
		{"bad name", map[string]string{secretNameKey("provisioner"): "${pvc.name}_x", secretNamespaceKey("provisioner"): "x"}, nil,
			`"${pvc.name}_x" resolved to "data_x" which is not a valid secret name`},
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

// The controller-modify secret goes into the PV's annotations, for the
// external-resizer; the default secret stands in for it.
func TestApplySecretRefsModify(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team"}}
	for _, tc := range []struct {
		name       string
		params     map[string]string
		wantName   string
		wantExists bool
	}{
		{"none", map[string]string{"kind": "block"}, "", false},
		{"its own", map[string]string{secretNameKey(controllerModifySecret): "m", secretNamespaceKey(controllerModifySecret): "x"}, "m", true},
		{"the default", map[string]string{"csi.storage.k8s.io/secret-name": "d", "csi.storage.k8s.io/secret-namespace": "x"}, "d", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{}},
				Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{}}}}
			if err := applySecretRefs(pv, tc.params, claim); err != nil {
				t.Fatal(err)
			}
			name, exists := pv.Annotations["volume.kubernetes.io/controller-modify-secret-name"]
			if name != tc.wantName || exists != tc.wantExists || (exists && pv.Annotations["volume.kubernetes.io/controller-modify-secret-namespace"] != "x") {
				t.Errorf("annotations %v, want the modify secret %q", pv.Annotations, tc.wantName)
			}
		})
	}
}
