package fakekube

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Direct access for in-process informers that a simulation feeds itself,
// from the store and the OnWrite hook, instead of through list and watch.

// List returns copies of the objects of a resource that match the
// selectors, in the store's order, and the store's resourceVersion.
func (s *Server) List(gvr schema.GroupVersionResource, namespace string, labelSelector labels.Selector, fieldSelector fields.Selector) ([]runtime.Object, string, error) {
	res, err := s.reg.lookup(gvr)
	if err != nil {
		return nil, "", err
	}
	items, rv := s.store.list(res, selector{namespace: namespace, labels: labelSelector, fields: fieldSelector})
	return items, rv, nil
}

// Matches says whether obj, of resource gvr, matches the selectors, with
// the field labels the real server supports for the kind.
func (s *Server) Matches(gvr schema.GroupVersionResource, obj runtime.Object, namespace string, labelSelector labels.Selector, fieldSelector fields.Selector) (bool, error) {
	res, err := s.reg.lookup(gvr)
	if err != nil {
		return false, err
	}
	return selector{namespace: namespace, labels: labelSelector, fields: fieldSelector}.matches(res, obj), nil
}
