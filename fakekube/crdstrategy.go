package fakekube

import (
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csisim/csisim/fakekube/crdschemas"
)

// crdStrategies are the strategies of the custom kinds, built once from
// their CRDs as apiextensions-apiserver's handler builds them for a CRD it
// serves (k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go,
// getOrCreateServingInfoFor): the OpenAPI schema's validator, the status
// schema's, the structural schema for the x-kubernetes-validations (CEL)
// rules. Building them compiles those rules, hence once per process.
var crdStrategies = sync.OnceValues(func() (map[schema.GroupVersionResource]strategy, error) {
	crds, err := crdschemas.CRDs()
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionResource]strategy{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			st, err := crdVersionStrategy(crd, v)
			if err != nil {
				return nil, fmt.Errorf("the CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}] = st
		}
	}
	return out, nil
})

// crdVersionStrategy builds the strategy of one served version of a CRD.
func crdVersionStrategy(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (strategy, error) {
	val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
	if err != nil || val == nil {
		return strategy{}, fmt.Errorf("no schema: %v", err)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return strategy{}, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return strategy{}, err
	}
	structural = structural.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(structural); err != nil {
		return strategy{}, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return strategy{}, err
	}
	var status *apiextensions.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if sub := v.Subresources; sub != nil && sub.Status != nil {
		status = &apiextensions.CustomResourceSubresourceStatus{}
		// For the status subresource only the status schema applies.
		if s, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
			if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&s); err != nil {
				return strategy{}, err
			}
		}
	}
	kind := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
	main := customresource.NewStrategy(unstructuredTyper{}, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, kind,
		validator, statusValidator, structural, status, nil, v.SelectableFields)
	st := strategy{main: main, decode: func(u map[string]any) {
		// Unknown fields go, and nulls where the schema allows none
		// (customresource_handler.go, unstructuredSchemaCoercer).
		structuralpruning.Prune(u, structural, true)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, structural)
	}}
	if status != nil {
		st.status = customresource.NewStatusStrategy(main)
	}
	return st, nil
}

// unstructuredTyper names a custom resource's kind from the object itself,
// as apiextensions-apiserver's typer does for unstructured objects.
type unstructuredTyper struct{}

func (unstructuredTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		return nil, false, runtime.NewMissingKindErr("unstructured object has no kind")
	}
	return []schema.GroupVersionKind{gvk}, false, nil
}

func (unstructuredTyper) Recognizes(schema.GroupVersionKind) bool { return true }
