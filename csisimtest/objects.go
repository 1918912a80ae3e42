package csisimtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Object is a Kubernetes object as this package hands it out and takes
// it: a typed one (*corev1.Pod, *corev1.PersistentVolumeClaim,
// *storagev1.VolumeAttachment... — every kind client-go's scheme knows),
// or an *unstructured.Unstructured for a kind it does not (a CRD's, such
// as snapshot.storage.k8s.io's VolumeSnapshot).
type Object interface {
	metav1.Object
	runtime.Object
}

// objectRef names one object as the scenario runner's object store takes
// it: kind as a scenario writes it, "" namespace for "default" (or for a
// cluster-scoped kind).
type objectRef struct {
	kind, namespace, name string
}

func (r objectRef) String() string {
	if r.namespace == "" {
		return r.kind + " " + r.name
	}
	return r.kind + " " + r.namespace + "/" + r.name
}

// refOf names u. A kind outside the core group carries its version and
// group (VolumeAttachment.v1.storage.k8s.io), so that it cannot be
// mistaken for a kind of the same name in another group.
func refOf(u *unstructured.Unstructured) objectRef {
	gvk := u.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind += "." + gvk.Version + "." + gvk.Group
	}
	return objectRef{kind: kind, namespace: u.GetNamespace(), name: u.GetName()}
}

// refFor names a typed or unstructured object.
func refFor(o runtime.Object) (objectRef, error) {
	u, err := toUnstructured(o)
	if err != nil {
		return objectRef{}, err
	}
	if u.GetName() == "" {
		return objectRef{}, fmt.Errorf("%s has no name", u.GetKind())
	}
	return refOf(u), nil
}

// gvkOf is the kind of o: its own for an unstructured object or one whose
// TypeMeta is set, else the one client-go's scheme knows its Go type by.
func gvkOf(o runtime.Object) (schema.GroupVersionKind, error) {
	if gvk := o.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w (set its apiVersion and kind)", o, err)
	}
	return gvks[0], nil
}

// toUnstructured converts o, with its apiVersion and kind set. An
// unstructured o is copied, not shared.
func toUnstructured(o runtime.Object) (*unstructured.Unstructured, error) {
	if o == nil {
		return nil, errors.New("nil object")
	}
	gvk, err := gvkOf(o)
	if err != nil {
		return nil, err
	}
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", o, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// fromUnstructured fills into (a typed or unstructured object) from u.
func fromUnstructured(u *unstructured.Unstructured, into runtime.Object) error {
	if dst, ok := into.(*unstructured.Unstructured); ok {
		dst.Object = u.DeepCopy().Object
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("converting %s to %T: %w", u.GetKind(), into, err)
	}
	return nil
}

// typed converts u to the Go type client-go's scheme has for its kind
// (*corev1.Pod...), or returns u itself for a kind the scheme lacks.
func typed(u *unstructured.Unstructured) (Object, error) {
	o, err := scheme.Scheme.New(u.GroupVersionKind())
	if err != nil {
		return u, nil // not a kind of client-go's: it stays unstructured
	}
	obj, ok := o.(Object)
	if !ok {
		return u, nil // a kind without metadata (a list): left as it is
	}
	if err := fromUnstructured(u, obj); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
	return obj, nil
}

// decodeManifest splits YAML or JSON documents into objects, converted as
// kubectl converts them; empty documents are skipped.
func decodeManifest(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var content map[string]any
		if err := dec.Decode(&content); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("manifest document %d: %w", doc, err)
		}
		if len(content) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: content}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("manifest document %d: apiVersion, kind and metadata.name are required", doc)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("the manifest holds no objects")
	}
	return out, nil
}
