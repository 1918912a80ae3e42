package fakekube

// nodes/{name}/proxy/{path}: the API server's proxy to a node's kubelet,
// as `kubectl get --raw /api/v1/nodes/node-1/proxy/metrics` uses it. The
// kubelet's side is Options.NodeProxy.

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NodeProxy answers a GET of path (without its leading slash) on node's
// kubelet: the body and its content type. A path the kubelet does not
// serve is an *UnservedPath error.
type NodeProxy func(node, path string) (body []byte, contentType string, err error)

// UnservedPath is NodeProxy's error for a path a simulated kubelet does
// not serve; Served lists what it does.
type UnservedPath struct {
	Path   string
	Served []string
}

func (e *UnservedPath) Error() string {
	return fmt.Sprintf("/%s is not served by csisim's simulated kubelet (it serves %s)", e.Path, strings.Join(e.Served, ", "))
}

func (s *Server) serveNodeProxy(w http.ResponseWriter, r *http.Request, req request) {
	gr := schema.GroupResource{Resource: "nodes/proxy"}
	if r.Method != http.MethodGet {
		writeError(w, apierrors.NewMethodNotSupported(gr, strings.ToLower(r.Method)))
		return
	}
	if _, err := s.store.get(req.res, "", req.name); err != nil {
		writeError(w, err)
		return
	}
	if s.nodeProxy == nil {
		writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("no kubelet of csisim answers for node %q", req.name)))
		return
	}
	body, contentType, err := s.nodeProxy(req.name, req.proxyPath)
	var unserved *UnservedPath
	switch {
	case errors.As(err, &unserved):
		writeError(w, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
			Reason:  metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("nodes/%s/proxy/%s is not supported by csisim serve: %v", req.name, req.proxyPath, err)}})
	case err != nil:
		writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("the kubelet of node %q: %v", req.name, err)))
	default:
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}
