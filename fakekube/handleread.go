package fakekube

// Reads of a collection: list and watch.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

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
