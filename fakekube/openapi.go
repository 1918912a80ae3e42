package fakekube

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	builder3util "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/csisim/csisim/fakekube/crdschemas"
	"github.com/csisim/csisim/fakekube/openapidefs"
)

// The server publishes OpenAPI documents as kube-apiserver does: v3 one
// per group version (/openapi/v3 is their index) and v2 one for all
// (/openapi/v2, which kubectl reads as protobuf). Each describes the
// operations (paths, verbs, the group-version-kind of each, the query and
// patch types they take) and the object schemas, built by kube-openapi's
// builders from the definitions openapi-gen generated from k8s.io/api
// (package openapidefs): the same schemas, descriptions and strategic
// merge extensions (x-kubernetes-patch-merge-key, -list-type, ...) the
// real server serves. kubectl needs them: explain reads the schemas, and
// client-side apply computes its strategic merge patch from them.
//
// The snapshot kinds are custom resources on a real cluster, whose schemas
// come from their CRD manifests (package crdschemas), completed as
// kube-apiserver's apiextensions builder does (addCRDSchemas); as for any
// custom resource, they take no strategic merge patch, and /openapi/v2
// leaves them out.

const (
	openAPIV3Path = "/openapi/v3"
	openAPIV2Path = "/openapi/v2"
)

// openAPIServices are the handlers of the server's OpenAPI documents.
type openAPIServices struct {
	v2 *handler.OpenAPIService
	v3 *handler3.OpenAPIService
}

// newOpenAPIServices builds the documents of the resources reg serves.
func newOpenAPIServices(reg *registry) (*openAPIServices, error) {
	namer := newDefinitionNamer(scheme)
	info := openAPIInfo
	v3 := handler3.NewOpenAPIService()
	crds, err := crdKindsByGVK()
	if err != nil {
		return nil, err
	}
	var allModels []string
	for _, gv := range reg.groupVersions() {
		doc := &spec3.OpenAPI{
			Version:    "3.0.0",
			Info:       info,
			Paths:      &spec3.Paths{Paths: map[string]*spec3.Path{}},
			Components: &spec3.Components{Schemas: map[string]*spec.Schema{}},
		}
		var models []string
		for _, r := range reg.all {
			if r.gvr.GroupVersion() != gv {
				continue
			}
			m := resourceModels(r)
			if r.crd {
				m = crdModels(r)
			}
			addResourcePaths(doc.Paths.Paths, r, m)
			switch k, ok := crds[r.gvk()]; {
			case !r.crd:
				models = append(models, m.object, m.list)
				models = append(models, m.subresources...)
			case ok:
				addCRDSchemas(doc.Components.Schemas, k, m, r.gvr.Resource)
				models = append(models, modelName(&metav1.ObjectMeta{}), modelName(&metav1.ListMeta{}))
			}
		}
		if len(models) > 0 {
			// What every group version's operations take and answer besides its kinds.
			models = append(models, modelName(&metav1.DeleteOptions{}), modelName(&metav1.Status{}), modelName(&metav1.WatchEvent{}))
			schemas, err := buildModelSchemas(models)
			if err != nil {
				return nil, fmt.Errorf("building the OpenAPI v3 schemas of %s: %w", gv, err)
			}
			for name, schema := range schemas {
				doc.Components.Schemas[name] = schema
			}
			allModels = append(allModels, models...)
		}
		v3.UpdateGroupVersion(groupVersionPath(gv), doc)
	}
	swagger, err := builder.BuildOpenAPIDefinitionsForResources(&common.Config{
		Info: info, GetDefinitions: openapidefs.GetOpenAPIDefinitions, GetDefinitionName: namer.name,
	}, allModels...)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v2 definitions: %w", err)
	}
	swagger.Paths = &spec.Paths{Paths: map[string]spec.PathItem{}}
	return &openAPIServices{v2: handler.NewOpenAPIService(swagger), v3: v3}, nil
}

// openAPIInfo is what the server's OpenAPI documents say of themselves.
var openAPIInfo = &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: KubernetesVersion}}

// buildModelSchemas are the OpenAPI v3 schemas of the named models and of
// every model they refer to, by model name.
func buildModelSchemas(models []string) (map[string]*spec.Schema, error) {
	return builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		Info: openAPIInfo, GetDefinitions: openapidefs.GetOpenAPIDefinitions, GetDefinitionName: newDefinitionNamer(scheme).name,
	}, models...)
}

// serveOpenAPI answers /openapi/v2, /openapi/v3 (the index) and
// /openapi/v3/<gv path>.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request, path string) {
	o, err := s.openAPI()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	switch {
	case path == openAPIV2Path:
		o.v2.RegisterOpenAPIVersionedService(openAPIV2Path, serveOne{w, r})
	case path == openAPIV3Path:
		o.v3.HandleDiscovery(w, r)
	default:
		o.v3.HandleGroupVersion(w, r)
	}
}

// serveOne is a common.PathHandler that runs the one handler registered
// with it on a request at once: handler.OpenAPIService offers its
// negotiating, gzipping handler only through registration.
type serveOne struct {
	w http.ResponseWriter
	r *http.Request
}

func (s serveOne) Handle(_ string, h http.Handler) { h.ServeHTTP(s.w, s.r) }

func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// resourceModelNames names the schemas of a resource's operations.
type resourceModelNames struct {
	object, list string
	// subresources: the kinds the resource's other subresources take.
	subresources []string
}

func resourceModels(r *resource) resourceModelNames {
	m := resourceModelNames{}
	if obj, err := scheme.New(r.gvk()); err == nil {
		m.object = modelName(obj)
	}
	if list, err := scheme.New(r.listGVK()); err == nil {
		m.list = modelName(list)
	}
	for _, sub := range r.subresources {
		if gvk := subresourceKind(sub); !gvk.Empty() {
			if obj, err := scheme.New(gvk); err == nil {
				m.subresources = append(m.subresources, modelName(obj))
			}
		}
	}
	return m
}

// subresourceKind is the kind a subresource other than status takes.
func subresourceKind(sub string) schema.GroupVersionKind {
	switch sub {
	case "binding":
		return coreV1.WithKind("Binding")
	case "token":
		return schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}
	}
	return schema.GroupVersionKind{}
}

// modelName is the OpenAPI name of obj's type ("io.k8s.api.core.v1.Pod").
func modelName(obj any) string {
	return restFriendly(util.GetCanonicalTypeName(obj))
}

// restFriendly turns a Go type name ("k8s.io/api/core/v1.Pod") into an
// OpenAPI one and leaves an OpenAPI one as it is.
func restFriendly(name string) string {
	if strings.Contains(name, "/") {
		return util.ToRESTFriendlyName(name)
	}
	return name
}

// definitionNamer gives each schema its REST-friendly name and, for the
// types the scheme knows by kind, the x-kubernetes-group-version-kind
// extension kubectl finds a kind's schema by, as the real server's namer
// (k8s.io/apiserver/pkg/endpoints/openapi) does.
type definitionNamer struct {
	gvks map[string][]any
}

func newDefinitionNamer(s *runtime.Scheme) definitionNamer {
	byModel := map[string][]schema.GroupVersionKind{}
	for gvk, t := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := modelName(reflect.New(t).Interface())
		byModel[name] = append(byModel[name], gvk)
	}
	n := definitionNamer{gvks: map[string][]any{}}
	for name, gvks := range byModel {
		sort.Slice(gvks, func(i, j int) bool {
			a, b := gvks[i], gvks[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
		for _, gvk := range gvks {
			n.gvks[name] = append(n.gvks[name], map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
		}
	}
	return n
}

func (n definitionNamer) name(name string) (string, spec.Extensions) {
	name = restFriendly(name)
	if gvks, ok := n.gvks[name]; ok {
		return name, spec.Extensions{"x-kubernetes-group-version-kind": gvks}
	}
	return name, nil
}

var patchContentTypes = []string{
	"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json",
}

// crdPatchContentTypes: a custom resource takes no strategic merge patch.
var crdPatchContentTypes = patchContentTypes[:2]

// addResourcePaths describes the collection, object and status paths of r.
func addResourcePaths(paths map[string]*spec3.Path, r *resource, models resourceModelNames) {
	base := "/" + groupVersionPath(r.gvr.GroupVersion())
	if r.namespaced {
		base += "/namespaces/{namespace}"
	}
	collection := base + "/" + r.gvr.Resource
	item := collection + "/{name}"
	gvk := map[string]any{"group": r.gvr.Group, "version": r.gvr.Version, "kind": r.kind}
	// op is an operation answering model (when the document has its schema).
	op := func(action, model string, params ...string) *spec3.Operation {
		o := &spec3.Operation{}
		o.Extensions = spec.Extensions{"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}
		for _, p := range params {
			o.Parameters = append(o.Parameters, &spec3.Parameter{ParameterProps: spec3.ParameterProps{
				Name: p, In: "query", Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}})
		}
		if model != "" {
			ref := &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(model))}}
			o.Responses = &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{
				http.StatusOK: {ResponseProps: spec3.ResponseProps{Description: "OK",
					Content: map[string]*spec3.MediaType{"application/json": {MediaTypeProps: spec3.MediaTypeProps{Schema: ref}}}}},
			}}}
		}
		return o
	}
	withBody := func(o *spec3.Operation, types ...string) *spec3.Operation {
		content := map[string]*spec3.MediaType{}
		for _, t := range types {
			content[t] = &spec3.MediaType{}
		}
		o.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content, Required: true}}
		return o
	}
	patchTypes := patchContentTypes
	if r.crd {
		patchTypes = crdPatchContentTypes
	}
	writeParams := []string{"dryRun", "fieldManager", "fieldValidation"}
	paths[collection] = &spec3.Path{PathProps: spec3.PathProps{
		Get:  op("list", models.list, "labelSelector", "fieldSelector", "resourceVersion", "watch", "timeoutSeconds"),
		Post: withBody(op("post", models.object, writeParams...), "*/*"),
	}}
	paths[item] = &spec3.Path{PathProps: spec3.PathProps{
		Get:    op("get", models.object),
		Put:    withBody(op("put", models.object, writeParams...), "*/*"),
		Patch:  withBody(op("patch", models.object, append(writeParams, "force")...), patchTypes...),
		Delete: op("delete", "", "dryRun", "gracePeriodSeconds", "propagationPolicy"),
	}}
	if r.hasStatus {
		paths[item+"/status"] = &spec3.Path{PathProps: spec3.PathProps{
			Get:   op("get", models.object),
			Put:   withBody(op("put", models.object, writeParams...), "*/*"),
			Patch: withBody(op("patch", models.object, append(writeParams, "force")...), patchTypes...),
		}}
	}
}

// crdModels names a custom kind's schemas as kube-apiserver does: its
// group, version and kind, REST-friendly ("io.k8s.storage.snapshot.v1.VolumeSnapshot").
func crdModels(r *resource) resourceModelNames {
	name := func(kind string) string {
		return util.ToRESTFriendlyName(r.gvr.Group + "/" + r.gvr.Version + "/" + kind)
	}
	return resourceModelNames{object: name(r.kind), list: name(r.kind + "List")}
}

// addCRDSchemas adds a custom kind's schema and its list's, completed as
// kube-apiserver's apiextensions OpenAPI builder completes a CRD's
// (k8s.io/apiextensions-apiserver pkg/controller/openapi/builder): the
// object metadata refers to ObjectMeta, apiVersion and kind say what
// TypeMeta's do, and each carries its group-version-kind.
func addCRDSchemas(schemas map[string]*spec.Schema, k crdschemas.Kind, m resourceModelNames, plural string) {
	typeMeta := metav1.TypeMeta{}.SwaggerDoc()
	ref := func(model string) spec.Schema {
		return *spec.RefSchema("#/components/schemas/" + common.EscapeJsonPointer(model))
	}
	typeMetaProperties := func(s *spec.Schema) {
		s.SetProperty("apiVersion", *spec.StringProperty().WithDescription(typeMeta["apiVersion"]))
		s.SetProperty("kind", *spec.StringProperty().WithDescription(typeMeta["kind"]))
	}
	gvk := func(kind string) []any {
		return []any{map[string]any{"group": k.GVK.Group, "version": k.GVK.Version, "kind": kind}}
	}
	obj := *k.Schema
	obj.Properties = map[string]spec.Schema{}
	for name, p := range k.Schema.Properties {
		obj.Properties[name] = p
	}
	typeMetaProperties(&obj)
	meta := ref(modelName(&metav1.ObjectMeta{}))
	obj.SetProperty("metadata", *meta.WithDescription(metav1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]))
	obj.AddExtension("x-kubernetes-group-version-kind", gvk(k.GVK.Kind))
	schemas[m.object] = builder3util.WrapRefs(&obj)

	items := ref(m.object)
	listMeta := ref(modelName(&metav1.ListMeta{}))
	list := new(spec.Schema).WithDescription(fmt.Sprintf("%s is a list of %s", k.ListKind, k.GVK.Kind)).
		WithRequired("items").
		SetProperty("items", *spec.ArrayProperty(&items).WithDescription(fmt.Sprintf(
			"List of %s. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", plural))).
		SetProperty("metadata", *listMeta.WithDescription(metav1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"]))
	list.Type = spec.StringOrArray{"object"}
	typeMetaProperties(list)
	list.AddExtension("x-kubernetes-group-version-kind", gvk(k.ListKind))
	schemas[m.list] = builder3util.WrapRefs(list)
}
