package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// borrowed are the objects outside the run's own namespace that a run
// on a shared cluster (Runner.Restore) applied, patched or deleted: the
// StorageClasses and CSIDrivers it made, the Nodes it tainted or cordoned.
// Its namespace goes at the end with what is in it; these are put back as
// they were before the run first touched them — deleted if it made them.
type borrowed struct {
	runNamespace string
	seen         map[string]bool
	objects      []borrowedObject
}

type borrowedObject struct {
	ref       ObjectRef
	namespace string
	before    map[string]any // nil: the run made it
}

// borrow notes the object a step is about to change, as it is now, the
// first time a step changes it. An object of a kind the server does not
// know is left to the step to report.
func (ex *executor) borrow(ctx context.Context, ref ObjectRef, namespace string) error {
	b := ex.borrowed
	if b == nil {
		return nil
	}
	scoped, err := ex.objects.clusterScoped(ref.Kind)
	if err != nil {
		return nil
	}
	if scoped {
		namespace = ""
	} else if namespace == "" || namespace == b.runNamespace {
		return nil
	}
	key := strings.ToLower(ref.Kind) + "/" + namespace + "/" + ref.Name
	if b.seen[key] {
		return nil
	}
	before, err := ex.objects.get(ctx, ref, namespace)
	if err != nil {
		return fmt.Errorf("read %s before changing it: %w", ref, err)
	}
	b.seen[key] = true
	b.objects = append(b.objects, borrowedObject{ref: ref, namespace: namespace, before: before})
	return nil
}

// manifestRef is the reference of a manifest's object: Kind.group, which
// the object store resolves as kubectl does.
func manifestRef(obj map[string]any) ObjectRef {
	u := unstructured.Unstructured{Object: obj}
	kind := u.GetKind()
	if g := u.GroupVersionKind().Group; g != "" {
		kind += "." + g
	}
	return ObjectRef{Kind: kind, Name: u.GetName()}
}

// giveBack puts the borrowed objects back, the last changed first: what
// the run made is deleted, what it changed or deleted is written back as
// it was (its spec, labels, annotations; the server's own fields left to
// the server).
func (ex *executor) giveBack(ctx context.Context) error {
	b := ex.borrowed
	if b == nil {
		return nil
	}
	var errs []error
	for i := len(b.objects) - 1; i >= 0; i-- {
		o := b.objects[i]
		if o.before == nil {
			if _, err := ex.objects.delete(ctx, o.ref, o.namespace, deleteOpts{}); err != nil {
				errs = append(errs, fmt.Errorf("delete %s, which the run made: %w", o.ref, err))
			}
			continue
		}
		obj := &unstructured.Unstructured{Object: asBefore(o.before)}
		if _, err := ex.objects.apply(ctx, obj, o.namespace); err != nil {
			errs = append(errs, fmt.Errorf("put %s back as it was: %w", o.ref, err))
		}
	}
	return errors.Join(errs...)
}

// asBefore is an object read from the server, ready to be written back:
// without what the server sets itself.
func asBefore(obj map[string]any) map[string]any {
	u := &unstructured.Unstructured{Object: obj}
	u = u.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	delete(u.Object, "status")
	return u.Object
}
