package fakekube

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The server publishes OpenAPI v3 documents that describe its operations
// (paths, verbs, the group-version-kind of each, the query parameters), not
// the object schemas. That is what kubectl needs from them: it learns that
// the server validates fields itself (the fieldValidation parameter of
// PATCH), so it sends ?fieldValidation=Strict instead of validating against
// schemas; and it computes strategic merge patches from its own types.

// openAPIPathPrefix is where the documents are served.
const openAPIPathPrefix = "/openapi/v3"

// serveOpenAPI answers /openapi/v3 (the index) and /openapi/v3/<gv path>.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request, path string) {
	docs := s.openAPIDocs()
	if path == openAPIPathPrefix {
		index := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
		for gvPath, doc := range docs {
			index.Paths[gvPath] = handler3.OpenAPIV3DiscoveryGroupVersion{
				ServerRelativeURL: fmt.Sprintf("%s/%s?hash=%s", openAPIPathPrefix, gvPath, hashOf(doc)),
			}
		}
		writeJSON(w, http.StatusOK, index)
		return
	}
	doc, ok := docs[strings.TrimPrefix(path, openAPIPathPrefix+"/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hashOf(doc)+`"`)
	_, _ = w.Write(doc)
}

func hashOf(doc []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(doc))[:32]
}

// openAPIDocs renders one document per group version, keyed by its path
// ("api/v1", "apis/storage.k8s.io/v1").
func (s *Server) openAPIDocs() map[string][]byte {
	docs := map[string][]byte{}
	for _, gv := range s.reg.groupVersions() {
		doc := &spec3.OpenAPI{
			Version: "3.0.0",
			Info:    &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: KubernetesVersion}},
			Paths:   &spec3.Paths{Paths: map[string]*spec3.Path{}},
		}
		for _, r := range s.reg.all {
			if r.gvr.GroupVersion() == gv {
				addResourcePaths(doc.Paths.Paths, r)
			}
		}
		data, err := json.Marshal(doc)
		if err != nil {
			continue // cannot happen for these plain structures
		}
		docs[groupVersionPath(gv)] = data
	}
	return docs
}

func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

var patchContentTypes = []string{
	"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json",
}

// addResourcePaths describes the collection, object and status paths of r.
func addResourcePaths(paths map[string]*spec3.Path, r *resource) {
	base := "/" + groupVersionPath(r.gvr.GroupVersion())
	if r.namespaced {
		base += "/namespaces/{namespace}"
	}
	collection := base + "/" + r.gvr.Resource
	item := collection + "/{name}"
	gvk := map[string]any{"group": r.gvr.Group, "version": r.gvr.Version, "kind": r.kind}
	op := func(action string, params ...string) *spec3.Operation {
		o := &spec3.Operation{}
		o.Extensions = spec.Extensions{"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}
		for _, p := range params {
			o.Parameters = append(o.Parameters, &spec3.Parameter{ParameterProps: spec3.ParameterProps{
				Name: p, In: "query", Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}})
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
	writeParams := []string{"dryRun", "fieldManager", "fieldValidation"}
	paths[collection] = &spec3.Path{PathProps: spec3.PathProps{
		Get:  op("list", "labelSelector", "fieldSelector", "resourceVersion", "watch", "timeoutSeconds"),
		Post: withBody(op("post", writeParams...), "*/*"),
	}}
	paths[item] = &spec3.Path{PathProps: spec3.PathProps{
		Get:    op("get"),
		Put:    withBody(op("put", writeParams...), "*/*"),
		Patch:  withBody(op("patch", append(writeParams, "force")...), patchContentTypes...),
		Delete: op("delete", "dryRun", "gracePeriodSeconds", "propagationPolicy"),
	}}
	if r.hasStatus {
		paths[item+"/status"] = &spec3.Path{PathProps: spec3.PathProps{
			Get:   op("get"),
			Put:   withBody(op("put", writeParams...), "*/*"),
			Patch: withBody(op("patch", append(writeParams, "force")...), patchContentTypes...),
		}}
	}
}
