package provisioner

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The StorageClass parameters that name secrets, as the sidecar reads them.
// Each kind has a name and a namespace key; the provisioner secret is
// passed to CreateVolume and DeleteVolume, the others are written into the
// PV for the components that need them.
const (
	provisionerSecret       = "provisioner"
	controllerPublishSecret = "controller-publish"
	nodeStageSecret         = "node-stage"
	nodePublishSecret       = "node-publish"
	controllerExpandSecret  = "controller-expand"
	nodeExpandSecret        = "node-expand"
)

func secretNameKey(kind string) string      { return csiParameterPrefix + kind + "-secret-name" }
func secretNamespaceKey(kind string) string { return csiParameterPrefix + kind + "-secret-namespace" }

var templateVar = regexp.MustCompile(`\$\{[^}]*\}`)

// secretRef resolves the class's reference to a secret of one kind for a
// claim: the name and namespace may use ${pvc.name}, ${pvc.namespace} and
// ${pv.name}, as the sidecar allows. It returns nil when the class names none.
func secretRef(params map[string]string, kind string, claim *corev1.PersistentVolumeClaim, pvName string) (*corev1.SecretReference, error) {
	name, hasName := params[secretNameKey(kind)]
	ns, hasNS := params[secretNamespaceKey(kind)]
	if !hasName && !hasNS {
		return nil, nil
	}
	if hasName != hasNS {
		return nil, fmt.Errorf("%s and %s must be set together", secretNameKey(kind), secretNamespaceKey(kind))
	}
	expand := func(s string) (string, error) {
		var bad string
		out := templateVar.ReplaceAllStringFunc(s, func(v string) string {
			switch v {
			case "${pvc.name}":
				return claim.Name
			case "${pvc.namespace}":
				return claim.Namespace
			case "${pv.name}":
				return pvName
			}
			bad = v
			return v
		})
		if bad != "" {
			return "", fmt.Errorf("%s is not a template variable the provisioner knows", bad)
		}
		return out, nil
	}
	n, err := expand(name)
	if err != nil {
		return nil, err
	}
	nsv, err := expand(ns)
	if err != nil {
		return nil, err
	}
	return &corev1.SecretReference{Name: n, Namespace: nsv}, nil
}

// secretData reads a secret's data for a CSI call.
func (p *Provisioner) secretData(ctx context.Context, ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := p.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: %v", ref.Name, ref.Namespace, err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out, nil
}

// applySecretRefs writes the secret references the class names into the PV,
// and the provisioner secret into the deletion-secret annotations.
func applySecretRefs(pv *corev1.PersistentVolume, params map[string]string, claim *corev1.PersistentVolumeClaim) error {
	refs := map[string]**corev1.SecretReference{
		controllerPublishSecret: &pv.Spec.CSI.ControllerPublishSecretRef,
		nodeStageSecret:         &pv.Spec.CSI.NodeStageSecretRef,
		nodePublishSecret:       &pv.Spec.CSI.NodePublishSecretRef,
		controllerExpandSecret:  &pv.Spec.CSI.ControllerExpandSecretRef,
		nodeExpandSecret:        &pv.Spec.CSI.NodeExpandSecretRef,
	}
	for kind, field := range refs {
		ref, err := secretRef(params, kind, claim, pv.Name)
		if err != nil {
			return err
		}
		*field = ref
	}
	ref, err := secretRef(params, provisionerSecret, claim, pv.Name)
	if err != nil {
		return err
	}
	if ref != nil {
		pv.Annotations[AnnDeletionSecretName] = ref.Name
		pv.Annotations[AnnDeletionSecretNamespace] = ref.Namespace
	}
	return nil
}

// isSidecarParameter: keys for the sidecar, never passed to the driver.
func isSidecarParameter(key string) bool { return strings.HasPrefix(key, csiParameterPrefix) }
