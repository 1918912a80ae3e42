package unmodelled

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckObject is Errors for a typed object of kind gvk, as the API server
// holds it after defaulting (old is nil on create). Objects of kinds the
// table does not name are not converted, so most writes cost nothing.
func CheckObject(gvk schema.GroupVersionKind, obj, old runtime.Object) field.ErrorList {
	if !covered(gvk.Group, gvk.Kind) {
		return nil
	}
	u, err := toMap(gvk, obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var before func() map[string]any
	if old != nil {
		before = func() map[string]any {
			o, err := toMap(gvk, old)
			if err != nil {
				return nil // judged as new: nothing is taken as unchanged
			}
			return o
		}
	}
	return errorList(check(u, before))
}

func toMap(gvk schema.GroupVersionKind, obj runtime.Object) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return u, nil
}

// covered: the table has a row for objects of the kind.
func covered(group, kind string) bool {
	for _, p := range patterns {
		if _, ok := p[group+"/"+kind]; ok {
			return true
		}
	}
	return false
}
