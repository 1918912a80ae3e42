package fakekube

// Server-side apply: a PATCH of type application/apply-patch+yaml, whose
// body is the fields its manager wants set (kubectl apply --server-side).

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// serveApply merges an applied configuration into the object, or creates
// the object from it if there is none, as kube-apiserver's apply patcher
// does (k8s.io/apiserver pkg/endpoints/handlers/patch.go, applyPatcher):
// the field manager merges it and keeps who owns what, refusing with 409
// a change to a field another manager holds, unless forced; the result
// then goes through the strategy and validation as any update.
func (s *Server) serveApply(w http.ResponseWriter, r *http.Request, req request, body []byte, params writeParams) {
	applied := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(body, &applied.Object); err != nil {
		writeError(w, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err)))
		return
	}
	if r.URL.Query().Get("fieldValidation") == metav1.FieldValidationStrict {
		// What strict decoding adds to the field manager's own check of
		// the fields against the schema: duplicate fields.
		if err := yaml.UnmarshalStrict(body, &map[string]any{}); err != nil {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", err)))
			return
		}
	}
	mutate := func(cur runtime.Object) (runtime.Object, error) {
		return s.store.applyLocked(req.res, req.subresource, cur, applied, params.fieldManager, params.force)
	}
	updated, err := s.store.update(r.Context(), req.actor, "", "patch", req.res, req.namespace, req.name, req.subresource,
		nil, mutate, applied.GetResourceVersion() != "")
	if apierrors.IsNotFound(err) && req.subresource == "" {
		// Apply creates what is not there (patch.go: forceAllowCreate);
		// a subresource's apply does not.
		created, err := s.store.applyCreate(r.Context(), req, applied, params)
		respond(w, r, http.StatusCreated, created, err)
		return
	}
	respond(w, r, http.StatusOK, updated, err)
}

// applyCreate creates the object an apply names from the applied
// configuration, its fields its manager's.
func (s *store) applyCreate(ctx context.Context, req request, applied *unstructured.Unstructured, params writeParams) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	empty, err := scheme.New(req.res.gvk())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj, err := s.applyLocked(req.res, "", empty, applied, params.fieldManager, params.force)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// k8s.io/apiserver pkg/endpoints/handlers/rest.go, checkName.
	if m.GetName() != req.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), req.name))
	}
	return s.createLocked(ctx, req.actor, "", req.res, req.namespace, obj)
}
