package fakekube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// request is a parsed resource URL.
type request struct {
	res         *resource
	namespace   string
	name        string
	subresource string
	// proxyPath is what follows nodes/{name}/proxy/: the path on the
	// node's kubelet (nodeproxy.go).
	proxyPath string
	actor     string
}

// serverContextKey carries the Server in a request's context, for the
// parts of a response (tables) that need the server's clock and objects.
type serverContextKey struct{}

// ServeHTTP answers the Kubernetes REST protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isInProcess(r) && s.refusesConnection(actorOf(r.UserAgent())) {
		// A stopped server has no connection to answer on: the client
		// over HTTP sees it closed.
		panic(http.ErrAbortHandler)
	}
	r = withWarnings(w, r.WithContext(context.WithValue(r.Context(), serverContextKey{}, s)))
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/version":
		writeJSON(w, http.StatusOK, serverVersion())
		return
	case path == "/healthz" || path == "/readyz" || path == "/livez":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok")
		return
	case path == openAPIV2Path || path == openAPIV3Path || strings.HasPrefix(path, openAPIV3Path+"/"):
		s.serveOpenAPI(w, r, path)
		return
	case path == "/api":
		writeJSON(w, http.StatusOK, s.coreVersions())
		return
	case path == "/apis":
		writeJSON(w, http.StatusOK, s.groupList())
		return
	}
	gv, rest, ok := splitGroupVersion(path)
	if !ok {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, path))
		return
	}
	if len(rest) == 0 {
		if gv.Version == "" {
			if g, ok := s.group(gv.Group); ok {
				writeJSON(w, http.StatusOK, g)
				return
			}
		} else if list, ok := s.resourceList(gv); ok {
			writeJSON(w, http.StatusOK, list)
			return
		}
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, path))
		return
	}
	req, err := s.parseResourcePath(gv, rest)
	if err != nil {
		writeError(w, err)
		return
	}
	req.actor = actorOf(r.UserAgent())
	if s.throttled(w, r, req) {
		return
	}
	s.slowWrite(r, req)
	s.serveResource(w, r, req)
}

// splitGroupVersion splits /api/v1/... and /apis/g/v/... into the group
// version and the remaining path segments.
func splitGroupVersion(path string) (schema.GroupVersion, []string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		return schema.GroupVersion{Version: segs[1]}, segs[2:], true
	case len(segs) == 2 && segs[0] == "apis":
		return schema.GroupVersion{Group: segs[1]}, nil, true
	case len(segs) >= 3 && segs[0] == "apis":
		return schema.GroupVersion{Group: segs[1], Version: segs[2]}, segs[3:], true
	}
	return schema.GroupVersion{}, nil, false
}

func (s *Server) parseResourcePath(gv schema.GroupVersion, segs []string) (request, error) {
	var req request
	var resName string
	switch {
	case segs[0] == "namespaces" && len(segs) == 3 && isNamespaceSubresource(gv, segs[2]):
		// namespaces/{name}/status: a namespace's subresource, not a
		// resource in it.
		resName = segs[0]
		segs = segs[1:]
	case segs[0] == "namespaces" && len(segs) >= 3:
		req.namespace, resName = segs[1], segs[2]
		segs = segs[3:]
	default:
		resName = segs[0]
		segs = segs[1:]
	}
	if len(segs) > 0 {
		req.name = segs[0]
	}
	if len(segs) > 1 {
		req.subresource = segs[1]
	}
	if resName == "nodes" && gv.Group == "" && len(segs) > 2 && segs[1] == "proxy" {
		req.proxyPath = strings.Join(segs[2:], "/")
		segs = segs[:2]
	}
	if len(segs) > 2 {
		return req, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group, Resource: resName}, strings.Join(segs, "/"))
	}
	res, err := s.reg.lookup(gv.WithResource(resName))
	if err != nil {
		// What the real server says for a path it does not serve.
		return req, apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
	}
	req.res = res
	if !res.namespaced && req.namespace != "" {
		return req, apierrors.NewNotFound(res.groupResource(), req.name)
	}
	switch req.subresource {
	case "":
	case "status":
		if !res.hasStatus {
			return req, apierrors.NewNotFound(res.groupResource(), req.name+"/status")
		}
	default:
		if _, ok := streamingSubresources[req.subresource]; ok && res.gvr == coreV1.WithResource("pods") {
			return req, s.streamingNotSupported(res, req.namespace, req.name, req.subresource)
		}
		known := false
		for _, sub := range res.subresources {
			known = known || sub == req.subresource
		}
		if !known {
			return req, apierrors.NewNotFound(res.groupResource(), req.name+"/"+req.subresource)
		}
	}
	return req, nil
}

// isNamespaceSubresource says whether namespaces/{name}/{sub} names a
// namespace's subresource (status, finalize) rather than a resource.
func isNamespaceSubresource(gv schema.GroupVersion, sub string) bool {
	return gv.Group == "" && (sub == "status" || sub == "finalize")
}

// actorOf turns a user agent into the component name shown in the
// timeline: what client-go's AddUserAgent appended to the binary's own
// agent ("kube-controller-manager/v1.37.2 (linux/amd64)
// kubernetes/abcdef0/persistentvolume-binder": persistentvolume-binder; a
// service account's, as kube-controller-manager's controllers send it,
// without its "system:serviceaccount:kube-system:"), else its first word
// ("kubectl/v1.32.4 (linux/amd64) …": kubectl; "scenario").
func actorOf(userAgent string) string {
	if name := AppendedName(userAgent); name != "" {
		return name
	}
	if i := strings.IndexAny(userAgent, "/ "); i > 0 {
		return userAgent[:i]
	}
	if userAgent == "" {
		return "unknown"
	}
	return userAgent
}

// AppendedName is the name client-go's AddUserAgent appended to a user
// agent of client-go's form, without a service account's
// "system:serviceaccount:kube-system:"; "" if there is none.
func AppendedName(userAgent string) string {
	_, tail, ok := strings.Cut(userAgent, ") kubernetes/")
	if !ok {
		return ""
	}
	_, appended, _ := strings.Cut(tail, "/")
	return strings.TrimPrefix(appended, "system:serviceaccount:kube-system:")
}

// UserAgent is the user agent of a client of the binary named binary
// (kube-controller-manager, csi-provisioner, kubelet) that names itself
// actor, of client-go's form (k8s.io/client-go rest/config.go,
// DefaultKubernetesUserAgent, with AddUserAgent's appended name): the API
// server takes the binary for the field manager of its writes, fakekube
// the actor for the timeline's.
func UserAgent(binary, actor string) string {
	return fmt.Sprintf("%s/%s (%s/%s) kubernetes/unknown/%s", binary, KubernetesVersion, goruntime.GOOS, goruntime.GOARCH, actor)
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && req.name == "":
		verb := readList
		if isTrue(q.Get("watch")) {
			verb = readWatch
		}
		if err := checkReadParams(verb, q); err != nil {
			writeError(w, err)
			return
		}
		if verb == readWatch {
			s.serveWatch(w, r, req)
		} else {
			s.serveList(w, r, req)
		}
	case req.subresource == "proxy":
		s.serveNodeProxy(w, r, req)
	case r.Method == http.MethodGet && req.subresource == "log":
		s.serveLog(w, r, req)
	case req.subresource == "log":
		writeError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/log"}, strings.ToLower(r.Method)))
	case r.Method == http.MethodGet:
		if err := checkReadParams(readGet, q); err != nil {
			writeError(w, err)
			return
		}
		obj, err := s.store.get(req.res, req.namespace, req.name)
		respond(w, r, http.StatusOK, obj, err)
	case r.Method == http.MethodPost && req.name == "":
		s.serveCreate(w, r, req)
	case r.Method == http.MethodPost && req.subresource == "binding":
		s.serveBinding(w, r, req)
	case r.Method == http.MethodPost && req.subresource == "token":
		s.serveTokenRequest(w, r, req)
	case r.Method == http.MethodPut && req.name != "":
		s.serveUpdate(w, r, req)
	case r.Method == http.MethodPatch && req.name != "":
		s.servePatch(w, r, req)
	case r.Method == http.MethodDelete && req.name != "" && req.subresource == "":
		s.serveDelete(w, r, req)
	default:
		writeError(w, apierrors.NewMethodNotSupported(req.res.groupResource(), strings.ToLower(r.Method)))
	}
}

func isTrue(v string) bool { return v == "true" || v == "1" }

// respond writes obj (or its Table, for a client that asks for one) in the
// encoding the client accepts, or the error.
func respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		if gvks, _, _ := scheme.ObjectKinds(obj); len(gvks) > 0 {
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
	}
	writeObject(w, r, code, obj, tableConvertorFor(r))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		data, _ = json.Marshal(apierrors.NewInternalError(err).Status())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeError answers with the metav1.Status the real server sends.
func writeError(w http.ResponseWriter, err error) {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	writeJSON(w, int(st.Code), &st)
}
