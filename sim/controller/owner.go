package controller

import (
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
