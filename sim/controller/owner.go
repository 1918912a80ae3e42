package controller

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// OwnerUID looks up the UID of the owner ns/name in a lister; an error
// means it is not there.
type OwnerUID func(ns, name string) (types.UID, error)

// EnqueueController adds ns/name of ref to q when ref is a controller
// reference to a kind owner that still exists with ref's UID, as
// k8s.io/sample-controller's handleObject resolves an owned object to the
// object that controls it.
func EnqueueController(q Queue, ns string, ref *metav1.OwnerReference, kind schema.GroupVersionKind, uid OwnerUID) {
	if ref == nil || ref.Kind != kind.Kind || ref.APIVersion != kind.GroupVersion().String() {
		return
	}
	if got, err := uid(ns, ref.Name); err != nil || got != ref.UID {
		return
	}
	q.Add(ns + "/" + ref.Name)
}

// EnqueueControllerHandler returns informer handlers that queue, for every
// added, updated or deleted object, the kind owner that controls it
// (EnqueueController).
func EnqueueControllerHandler(q Queue, kind schema.GroupVersionKind, uid OwnerUID) cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) {
		if o, ok := Unwrap(obj).(metav1.Object); ok {
			EnqueueController(q, o.GetNamespace(), metav1.GetControllerOf(o), kind, uid)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// Getter gets a namespaced object from a lister by namespace and name, as
// a workload controller's lister does (ReplicaSets(ns).Get(name)).
type Getter[T metav1.Object] func(ns, name string) (T, error)

// UID is the OwnerUID of the getter's kind, for EnqueueControllerHandler.
func (get Getter[T]) UID(ns, name string) (types.UID, error) {
	obj, err := get(ns, name)
	if err != nil {
		return "", err
	}
	return obj.GetUID(), nil
}

// Lookup is the start of a sync, as in k8s.io/sample-controller: the
// queue key's object from the lister; ok is false, with no error, when
// it is gone — there is nothing left to do for it.
func (get Getter[T]) Lookup(key string) (obj T, ok bool, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return obj, false, err
	}
	obj, err = get(ns, name)
	if apierrors.IsNotFound(err) {
		return obj, false, nil
	}
	return obj, err == nil, err
}
