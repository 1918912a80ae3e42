package volumeutil

import (
	"fmt"
	"maps"
	"os"
	"slices"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Names the snapshot-controller and the csi-snapshotter share
// (external-snapshotter pkg/utils/util.go).
const (
	// VolumeSnapshotContentFinalizer holds a bound content until the
	// sidecar has deleted (or retained) its snapshot.
	VolumeSnapshotContentFinalizer = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
	// VolumeSnapshotBoundFinalizer holds a snapshot bound to a content of
	// deletionPolicy Delete until the content is gone.
	VolumeSnapshotBoundFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"
	// VolumeSnapshotAsSourceFinalizer holds a snapshot while a claim is
	// being restored from it.
	VolumeSnapshotAsSourceFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"
	// PVCAsSourceFinalizer holds the source claim while its snapshot is
	// taken.
	PVCAsSourceFinalizer = "snapshot.storage.kubernetes.io/pvc-as-source-protection"
	// AnnIsDefaultSnapshotClass marks the default VolumeSnapshotClass of a
	// driver.
	AnnIsDefaultSnapshotClass = "snapshot.storage.kubernetes.io/is-default-class"
	// AnnSnapshotBeingDeleted tells the sidecar that the content's
	// snapshot is being deleted.
	AnnSnapshotBeingDeleted = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"
	// AnnSnapshotBeingCreated is the sidecar's: CreateSnapshot was asked
	// and has not answered for good.
	AnnSnapshotBeingCreated = "snapshot.storage.kubernetes.io/volumesnapshot-being-created"
	// The secret the sidecar creates and deletes the snapshot with.
	AnnSnapshotDeletionSecretName      = "snapshot.storage.kubernetes.io/deletion-secret-name"
	AnnSnapshotDeletionSecretNamespace = "snapshot.storage.kubernetes.io/deletion-secret-namespace"
)

// SnapshotContentName is the name of the content the snapshot-controller
// makes for a snapshot of a claim (pkg/utils
// GetDynamicSnapshotContentNameForSnapshot).
func SnapshotContentName(s *snapv1.VolumeSnapshot) string { return "snapcontent-" + string(s.UID) }

// SnapshotSecretParams names the parameters of a VolumeSnapshotClass
// that point at one secret, and what the messages call it.
type SnapshotSecretParams struct{ what, nameKey, namespaceKey string }

// The secrets of a VolumeSnapshotClass.
var (
	SnapshotterSecret     = SnapshotSecretParams{"Snapshotter", "csi.storage.k8s.io/snapshotter-secret-name", "csi.storage.k8s.io/snapshotter-secret-namespace"}
	SnapshotterListSecret = SnapshotSecretParams{"SnapshotterList", "csi.storage.k8s.io/snapshotter-list-secret-name", "csi.storage.k8s.io/snapshotter-list-secret-namespace"}
)

// SnapshotSecretReference resolves the secret a class's parameters name,
// nil if they name none, with the real controllers' templates and
// messages: the namespace may use ${volumesnapshotcontent.name} and
// ${volumesnapshot.namespace}, the name ${volumesnapshot.name} too
// (snapshot may be nil, then only the content's name is known).
func SnapshotSecretReference(p SnapshotSecretParams, params map[string]string, contentName string, s *snapv1.VolumeSnapshot) (*corev1.SecretReference, error) {
	name, hasName := params[p.nameKey]
	ns, hasNS := params[p.namespaceKey]
	switch {
	case hasName != hasNS:
		return nil, fmt.Errorf("failed to get name and namespace template from params: either name and namespace for %s secrets specified, Both must be specified", p.what)
	case !hasName:
		return nil, nil
	case name == "" || ns == "":
		return nil, fmt.Errorf("failed to get name and namespace template from params: %s secrets specified in parameters but value of either namespace or name is empty", p.what)
	}
	nsVars := map[string]string{"volumesnapshotcontent.name": contentName}
	nameVars := map[string]string{"volumesnapshotcontent.name": contentName}
	if s != nil {
		nsVars["volumesnapshot.namespace"] = s.Namespace
		nameVars["volumesnapshot.namespace"] = s.Namespace
		nameVars["volumesnapshot.name"] = s.Name
	}
	return ResolveSecretReference(ns, nsVars, name, nameVars)
}

// ResolveSecretReference expands a secret's namespace and name templates
// ($name and ${name}) and checks the results, with the messages the real
// sidecars and snapshot controller share (external-provisioner
// getSecretReference, external-snapshotter utils GetSecretReference).
func ResolveSecretReference(ns string, nsVars map[string]string, name string, nameVars map[string]string) (*corev1.SecretReference, error) {
	resolvedNS, err := expand(ns, nsVars)
	if err != nil {
		return nil, fmt.Errorf("error resolving value %q: %v", ns, err)
	}
	if len(validation.IsDNS1123Label(resolvedNS)) > 0 {
		if ns != resolvedNS {
			return nil, fmt.Errorf("%q resolved to %q which is not a valid namespace name", ns, resolvedNS)
		}
		return nil, fmt.Errorf("%q is not a valid namespace name", ns)
	}
	resolvedName, err := expand(name, nameVars)
	if err != nil {
		return nil, fmt.Errorf("error resolving value %q: %v", name, err)
	}
	if len(validation.IsDNS1123Subdomain(resolvedName)) > 0 {
		if name != resolvedName {
			return nil, fmt.Errorf("%q resolved to %q which is not a valid secret name", name, resolvedName)
		}
		return nil, fmt.Errorf("%q is not a valid secret name", name)
	}
	return &corev1.SecretReference{Name: resolvedName, Namespace: resolvedNS}, nil
}

// expand replaces $name and ${name} from vars; unknown names are an error
// listing them sorted, as the real controllers' resolveTemplate does.
func expand(template string, vars map[string]string) (string, error) {
	var missing []string
	out := os.Expand(template, func(k string) string {
		v, ok := vars[k]
		if !ok && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("invalid tokens: %q", missing)
	}
	return out, nil
}

// WithKind returns a copy of a snapshot object with its apiVersion and
// kind set, for an event recorder: the objects a typed client returns
// carry none, and the recorder's scheme (client-go's) does not know the
// snapshot kinds, so it could not name the event's object otherwise.
func WithKind(obj runtime.Object) runtime.Object {
	var gvk schema.GroupVersionKind
	switch obj.(type) {
	case *snapv1.VolumeSnapshot:
		gvk = snapv1.SchemeGroupVersion.WithKind("VolumeSnapshot")
	case *snapv1.VolumeSnapshotContent:
		gvk = snapv1.SchemeGroupVersion.WithKind("VolumeSnapshotContent")
	case *groupsnapv1.VolumeGroupSnapshot:
		gvk = groupsnapv1.SchemeGroupVersion.WithKind("VolumeGroupSnapshot")
	case *groupsnapv1.VolumeGroupSnapshotContent:
		gvk = groupsnapv1.SchemeGroupVersion.WithKind("VolumeGroupSnapshotContent")
	default:
		return obj
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(gvk)
	return c
}

// WithAnnotation is a copy of annotations with key set to value: for a
// patch that replaces an object's annotations without touching the
// informer's copy.
func WithAnnotation(annotations map[string]string, key, value string) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}
