package fakekube

// Writes of one object: create, update, patch and delete.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, req request) {
	params, err := writeParamsOf(r, "create", "")
	if err != nil {
		writeError(w, err)
		return
	}
	obj, err := s.decodeBody(r, req.res)
	if err != nil {
		writeError(w, err)
		return
	}
	created, err := s.store.create(r.Context(), req.actor, params.manager(r.UserAgent()), req.res, req.namespace, obj)
	respond(w, r, http.StatusCreated, created, err)
}

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, req request) {
	params, err := writeParamsOf(r, "update", "")
	if err != nil {
		writeError(w, err)
		return
	}
	obj, err := s.decodeBody(r, req.res)
	if err != nil {
		writeError(w, err)
		return
	}
	conditional := false
	if m, err := meta.Accessor(obj); err == nil {
		conditional = m.GetResourceVersion() != ""
	}
	updated, err := s.store.update(r.Context(), req.actor, params.manager(r.UserAgent()), "update", req.res, req.namespace, req.name, req.subresource, obj, nil, conditional)
	respond(w, r, http.StatusOK, updated, err)
}

func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, req request) {
	patch, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	patchType := types.PatchType(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	apply, err := patchFunc(patchType, patch, req.res)
	if err != nil {
		writeError(w, err)
		return
	}
	params, err := writeParamsOf(r, "patch", patchType)
	if err != nil {
		writeError(w, err)
		return
	}
	if patchType == types.ApplyYAMLPatchType {
		s.serveApply(w, r, req, patch, params)
		return
	}
	mutate := func(cur runtime.Object) (runtime.Object, error) {
		curJSON, err := json.Marshal(withTypeMeta(req.res, cur))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := apply(curJSON)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch could not be applied: %v", err))
		}
		obj, err := s.decode(patched, req.res, false)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the patched object is invalid: %v", err))
		}
		return obj, nil
	}
	updated, err := s.store.update(r.Context(), req.actor, params.manager(r.UserAgent()), "patch", req.res, req.namespace, req.name, req.subresource, nil, mutate,
		patchSetsResourceVersion(patchType, patch))
	respond(w, r, http.StatusOK, updated, err)
}

// patchFunc returns the function that applies a patch of the given type;
// server-side apply (serveApply) has none.
func patchFunc(pt types.PatchType, patch []byte, res *resource) (func([]byte) ([]byte, error), error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
		}
		return p.Apply, nil
	case types.MergePatchType:
		return func(cur []byte) ([]byte, error) { return jsonpatch.MergePatch(cur, patch) }, nil
	case types.StrategicMergePatchType:
		schemaObj, err := scheme.New(res.gvk())
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return func(cur []byte) ([]byte, error) {
			return strategicpatch.StrategicMergePatch(cur, patch, schemaObj)
		}, nil
	case types.ApplyYAMLPatchType:
		return nil, nil
	default:
		// CBOR apply (application/apply-patch+cbor) is served only with
		// the CBORServingAndStorage feature gate, off in v1.37.
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.groupResource(), "",
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType), 0, false)
	}
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, req request) {
	var opts metav1.DeleteOptions
	if body, err := readBody(r); err != nil {
		writeError(w, err)
		return
	} else if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeInto(r, body, &opts); err != nil {
			writeError(w, err)
			return
		}
	}
	if g := r.URL.Query().Get("gracePeriodSeconds"); g != "" {
		v, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			writeError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		opts.GracePeriodSeconds = &v
	}
	obj, err := s.store.delete(req.actor, req.res, req.namespace, req.name, opts)
	respond(w, r, http.StatusOK, obj, err)
}
