package provisioner

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/volumeutil"
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
	controllerModifySecret  = "controller-modify"
)

func secretNameKey(kind string) string      { return csiParameterPrefix + kind + "-secret-name" }
func secretNamespaceKey(kind string) string { return csiParameterPrefix + kind + "-secret-namespace" }

// secretNames are the kinds' names in the sidecar's messages, and the
// deprecated keys (without the prefix) some kinds still read.
var secretNames = map[string]struct{ name, oldName, oldNamespace string }{
	provisionerSecret:       {"Provisioner", "csiProvisionerSecretName", "csiProvisionerSecretNamespace"},
	controllerPublishSecret: {"ControllerPublish", "csiControllerPublishSecretName", "csiControllerPublishSecretNamespace"},
	nodeStageSecret:         {"NodeStage", "csiNodeStageSecretName", "csiNodeStageSecretNamespace"},
	nodePublishSecret:       {"NodePublish", "csiNodePublishSecretName", "csiNodePublishSecretNamespace"},
	controllerExpandSecret:  {name: "ControllerExpand"},
	nodeExpandSecret:        {name: "NodeExpand"},
	controllerModifySecret:  {name: "ControllerModify"},
	defaultSecret:           {name: "Default"},
}

// defaultSecret is the kind of csi.storage.k8s.io/secret-name and
// -namespace: the secret of every kind the class names none for.
const defaultSecret = ""

func secretKeys(kind string) (name, namespace string) {
	if kind == defaultSecret {
		return csiParameterPrefix + "secret-name", csiParameterPrefix + "secret-namespace"
	}
	return secretNameKey(kind), secretNamespaceKey(kind)
}

// secretTemplates are the name and namespace templates the class gives
// for one kind of secret; both empty when it gives none.
func secretTemplates(params map[string]string, kind string) (name, namespace string, err error) {
	names := secretNames[kind]
	nameKey, nsKey := secretKeys(kind)
	numName, numNS := 0, 0
	for _, k := range []string{names.oldName, nameKey} {
		if v, ok := params[k]; ok && k != "" {
			name, numName = v, numName+1
		}
	}
	for _, k := range []string{names.oldNamespace, nsKey} {
		if v, ok := params[k]; ok && k != "" {
			namespace, numNS = v, numNS+1
		}
	}
	switch {
	case numName > 1 || numNS > 1:
		return "", "", fmt.Errorf("%s secrets specified in parameters with both \"csi\" and \"%s\" keys", names.name, csiParameterPrefix)
	case numName != numNS:
		return "", "", fmt.Errorf("either name and namespace for %s secrets specified, Both must be specified", names.name)
	case numName == 1 && (name == "" || namespace == ""):
		return "", "", fmt.Errorf("%s secrets specified in parameters but value of either namespace or name is empty", names.name)
	}
	return name, namespace, nil
}

// secretRef resolves the class's reference to a secret of one kind for a
// claim, as the sidecar does: the kind's keys (new or deprecated), else
// the default secret's; the namespace may use ${pv.name} and
// ${pvc.namespace}, the name also ${pvc.name} and
// ${pvc.annotations['KEY']}. It returns nil when the class names none.
func secretRef(params map[string]string, kind string, claim *corev1.PersistentVolumeClaim, pvName string) (*corev1.SecretReference, error) {
	name, ns, err := secretTemplates(params, kind)
	if err != nil {
		return nil, fmt.Errorf("failed to get name and namespace template from params: %v", err)
	}
	if name == "" && ns == "" {
		if name, ns, err = secretTemplates(params, defaultSecret); err != nil {
			return nil, fmt.Errorf("failed to get default name and namespace template from params: %v", err)
		}
	}
	if name == "" && ns == "" {
		return nil, nil
	}
	nsVars := map[string]string{"pv.name": pvName, "pvc.namespace": claim.Namespace}
	nameVars := map[string]string{"pv.name": pvName, "pvc.name": claim.Name, "pvc.namespace": claim.Namespace}
	for k, v := range claim.Annotations {
		nameVars["pvc.annotations['"+k+"']"] = v
	}
	return volumeutil.ResolveSecretReference(ns, nsVars, name, nameVars)
}

// secretData reads a secret's data for a CSI call.
func (p *Provisioner) secretData(ctx context.Context, ref *corev1.SecretReference) (map[string]string, error) {
	return volumeutil.SecretData(ctx, p.client, ref)
}

// applySecretRefs writes the secret references the class names into the PV,
// the provisioner secret into the deletion-secret annotations and the
// controller-modify secret into the modify-secret annotations.
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
	// The external-resizer's secret for ControllerModifyVolume.
	if ref, err = secretRef(params, controllerModifySecret, claim, pv.Name); err != nil {
		return err
	}
	if ref != nil {
		pv.Annotations[volumeutil.AnnModifySecretName] = ref.Name
		pv.Annotations[volumeutil.AnnModifySecretNamespace] = ref.Namespace
	}
	return nil
}

// isSidecarParameter: keys for the sidecar, never passed to the driver.
func isSidecarParameter(key string) bool { return strings.HasPrefix(key, csiParameterPrefix) }
