package fakekube

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// maxBodyBytes is the real server's request size limit.
const maxBodyBytes = 3 * 1024 * 1024

// request is a parsed resource URL.
type request struct {
	res         *resource
	namespace   string
	name        string
	subresource string
	actor       string
}

// serverContextKey carries the Server in a request's context, for the
// parts of a response (tables) that need the server's clock and objects.
type serverContextKey struct{}

// ServeHTTP answers the Kubernetes REST protocol.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

// actorOf turns a user agent ("external-provisioner", "kubectl/v1.32.4 (linux/amd64) …")
// into the component name shown in the timeline.
func actorOf(userAgent string) string {
	if i := strings.IndexAny(userAgent, "/ "); i > 0 {
		return userAgent[:i]
	}
	if userAgent == "" {
		return "unknown"
	}
	return userAgent
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

func (s *Server) selectorFrom(req request, q map[string][]string) (selector, error) {
	sel := selector{namespace: req.namespace}
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	ls, err := labels.Parse(get("labelSelector"))
	if err != nil {
		return sel, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	sel.labels = ls
	fs, err := fields.ParseSelector(get("fieldSelector"))
	if err != nil {
		return sel, apierrors.NewBadRequest(err.Error())
	}
	// Refuse field labels the real server does not index for this kind,
	// with its message, rather than silently matching nothing.
	probe, _ := scheme.New(req.res.gvk())
	supported := fieldSet(req.res, probe)
	for _, r := range fs.Requirements() {
		if _, ok := supported[r.Field]; !ok {
			return sel, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	sel.fields = fs
	return sel, nil
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, req request) {
	sel, err := s.selectorFrom(req, r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	items, rv := s.store.list(req.res, sel)
	list, err := scheme.New(req.res.listGVK())
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	if err := meta.SetList(list, items); err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(rv)
	list.GetObjectKind().SetGroupVersionKind(req.res.listGVK())
	writeObject(w, r, http.StatusOK, list, s.tableConvertor())
}

func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	sel, err := s.selectorFrom(req, q)
	if err != nil {
		writeError(w, err)
		return
	}
	opts := watchOptions{
		resourceVersion:   q.Get("resourceVersion"),
		sendInitialEvents: isTrue(q.Get("sendInitialEvents")),
		allowBookmarks:    isTrue(q.Get("allowWatchBookmarks")),
	}
	if opts.sendInitialEvents && q.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) {
		writeError(w, apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "",
			field.ErrorList{field.Forbidden(field.NewPath("sendInitialEvents"),
				"sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan")}))
		return
	}
	ctx := r.Context()
	if t := q.Get("timeoutSeconds"); t != "" {
		if secs, err := strconv.Atoi(t); err == nil && secs > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(secs)*time.Second)
			defer cancel()
		}
	}
	watcher, err := s.store.openWatch(req.res, sel, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	defer s.store.closeWatch(watcher)
	media := negotiateWatch(r.Header.Get("Accept"))
	var table *tableOptions
	if media.table != nil {
		opts, err := tableOptionsFrom(*media.table, q)
		if err != nil {
			writeError(w, err)
			return
		}
		table = &opts
	}
	conv := s.tableConvertor()
	info := media.info
	stream := info.StreamSerializer
	if stream == nil {
		writeError(w, unsupportedMediaType())
		return
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := streaming.NewEncoder(stream.Framer.NewFrameWriter(w), stream.Serializer)
	var buf bytes.Buffer
	for {
		evs, err := watcher.next(ctx)
		if err != nil {
			return
		}
		for _, ev := range evs {
			if ev.Type == watch.Bookmark && !opts.allowBookmarks {
				continue
			}
			// The object inside the event is encoded on its own first, as
			// the real server's embedded encoder does — as a one-row Table
			// if the client asked for Tables. Only the first event's Table
			// defines the columns; an object that cannot be printed, and
			// the Status of an ERROR event, go out as they are.
			obj := ev.Object
			if ev.Type != watch.Error {
				obj = withTypeMeta(req.res, obj)
			}
			if table != nil && ev.Type != watch.Error {
				if t, err := conv.convert(obj, *table); err == nil {
					obj = t
				}
				table.noHeaders = true
			}
			buf.Reset()
			if err := info.Serializer.Encode(obj, &buf); err != nil {
				return
			}
			raw := append([]byte(nil), buf.Bytes()...)
			if err := enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if slices.ContainsFunc(evs, func(ev watch.Event) bool { return ev.Type == watch.Error }) {
			return // an ERROR event ends a watch
		}
	}
}

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, req request) {
	obj, err := s.decodeBody(r, req.res)
	if err != nil {
		writeError(w, err)
		return
	}
	created, err := s.store.create(r.Context(), req.actor, req.res, req.namespace, obj)
	respond(w, r, http.StatusCreated, created, err)
}

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, req request) {
	obj, err := s.decodeBody(r, req.res)
	if err != nil {
		writeError(w, err)
		return
	}
	conditional := false
	if m, err := meta.Accessor(obj); err == nil {
		conditional = m.GetResourceVersion() != ""
	}
	updated, err := s.store.update(r.Context(), req.actor, "update", req.res, req.namespace, req.name, req.subresource, obj, nil, conditional)
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
	updated, err := s.store.update(r.Context(), req.actor, "patch", req.res, req.namespace, req.name, req.subresource, nil, mutate,
		patchSetsResourceVersion(patchType, patch))
	respond(w, r, http.StatusOK, updated, err)
}

// patchFunc returns the function that applies a patch of the given type.
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
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.groupResource(), "",
			"server-side apply is not supported by csisim's API server; use client-side apply (kubectl apply without --server-side)", 0, false)
	default:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.groupResource(), "",
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType), 0, false)
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

// serveBinding assigns a pod to a node, as the scheduler does through the
// pods/binding subresource.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, req request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var binding corev1.Binding
	if err := decodeInto(r, body, &binding); err != nil {
		writeError(w, err)
		return
	}
	if binding.Target.Name == "" {
		writeError(w, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, req.name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")}))
		return
	}
	labels := s.bindingLabels(&binding)
	mutate := func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", req.name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod %s is already assigned to node %q", req.name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = binding.Target.Name
		// The nomination of a preemption is cleared (the
		// ClearingNominatedNodeNameAfterBinding gate, beta and on since
		// v1.35; pkg/registry/core/pod/storage/storage.go).
		pod.Status.NominatedNodeName = ""
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		for k, v := range labels {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(s.clock.Now()).Rfc3339Copy()})
		return pod, nil
	}
	// A binding changes spec.nodeName and the PodScheduled condition in one
	// write, as the real server's binding storage does.
	_, err = s.store.update(r.Context(), req.actor, "bind", req.res, req.namespace, req.name, "binding", nil, mutate, false)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// topologyLabels are the node labels the PodTopologyLabels admission
// plugin (on by default since v1.35) copies onto a pod bound to the node.
var topologyLabels = []string{corev1.LabelTopologyZone, corev1.LabelTopologyRegion}

// bindingLabels are the labels a binding puts on its pod: its own, and
// the target node's zone and region, overwriting the pod's.
func (s *Server) bindingLabels(binding *corev1.Binding) map[string]string {
	out := map[string]string{}
	for k, v := range binding.Labels {
		out[k] = v
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return out
	}
	res, err := s.reg.lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	if err != nil {
		return out
	}
	obj, err := s.store.get(res, "", binding.Target.Name)
	if err != nil {
		return out // no node, no labels: as the plugin ignores NotFound
	}
	node := obj.(*corev1.Node)
	for _, k := range topologyLabels {
		if v, ok := node.Labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(body) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	return body, nil
}

// decodeBody reads a JSON or YAML object of the resource's kind; with
// ?fieldValidation=Strict, unknown and duplicate fields are refused.
func (s *Server) decodeBody(r *http.Request, res *resource) (runtime.Object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	info, err := serializerFor(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if info.MediaType == runtime.ContentTypeProtobuf {
		return decodeWith(info.Serializer, body, res)
	}
	isYAML := info.MediaType != runtime.ContentTypeJSON
	return s.decodeObject(body, res, isYAML, r.URL.Query().Get("fieldValidation") == "Strict")
}

func (s *Server) decode(body []byte, res *resource, strict bool) (runtime.Object, error) {
	return s.decodeObject(body, res, false, strict)
}

// decodeObject decodes a JSON or YAML body into the resource's type and
// fails the way the real server does, with its messages: a body it cannot
// read is "unrecognized" (quoting the body's start), one of another type
// "cannot be handled".
func (s *Server) decodeObject(body []byte, res *resource, isYAML, strict bool) (runtime.Object, error) {
	want := res.gvk()
	data := body
	if isYAML {
		converted, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, unrecognized(want.Kind, errors.New(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")), body)
		}
		data = converted
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, unrecognized(want.Kind, fmt.Errorf("couldn't get version/kind; json parse error: %v", err), body)
	}
	got := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if tm.APIVersion == "" {
		got.Group, got.Version = want.Group, want.Version
	}
	if got.Kind == "" {
		got.Kind = want.Kind
	}
	if got.GroupVersion() != want.GroupVersion() {
		return nil, cannotHandle(got, want.Kind, fmt.Errorf("no kind %q is registered for version %q in scheme %q",
			got.Kind, got.GroupVersion().String(), "pkg/runtime/scheme.go:111"))
	}
	if got.Kind != want.Kind {
		return nil, cannotHandle(got, want.Kind, fmt.Errorf("converting (%s.%s) to (%s.%s): unknown conversion",
			got.Version, got.Kind, internalGroup(want.Group), want.Kind))
	}
	obj, err := scheme.New(want)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Strict: strict})
	out, _, err := ser.Decode(data, &want, obj)
	if err != nil {
		return nil, cannotHandle(got, want.Kind, err)
	}
	return out, nil
}

func cannotHandle(got schema.GroupVersionKind, wantKind string, err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", got.Kind, got.Version, wantKind, err))
}

func unrecognized(wantKind string, err error, body []byte) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", wantKind, err, summarize(body, 30)))
}

// summarize quotes the start of a body as the real server does: JSON as
// text, anything else in hex.
func summarize(data []byte, max int) string {
	more := ""
	if len(data) > max {
		data, more = data[:max], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + more
	default:
		return hex.EncodeToString(data) + more
	}
}

// internalGroup is the name of a group's internal package, which the real
// server's conversion errors name ("core" for the core group).
func internalGroup(group string) string {
	if group == "" {
		return "core"
	}
	return strings.Split(group, ".")[0]
}

// decodeInto decodes an options or subresource body (DeleteOptions,
// Binding) in whatever encoding the client sent it.
func decodeInto(r *http.Request, body []byte, into runtime.Object) error {
	info, err := serializerFor(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	if _, _, err := info.Serializer.Decode(body, nil, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: %v", err))
	}
	return nil
}

// decodeWith decodes a protobuf body, which carries its own type.
func decodeWith(dec runtime.Decoder, body []byte, res *resource) (runtime.Object, error) {
	want := res.gvk()
	into, err := scheme.New(want)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, gvk, err := dec.Decode(body, &want, into)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as %s: %v", want.Kind, err))
	}
	if *gvk != want {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request is a %s, not a %s", gvk.String(), want.String()))
	}
	return out, nil
}

// withTypeMeta returns obj with apiVersion and kind set, as the wire needs.
func withTypeMeta(res *resource, obj runtime.Object) runtime.Object {
	if obj.GetObjectKind().GroupVersionKind() == res.gvk() {
		return obj
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(res.gvk())
	return c
}

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
