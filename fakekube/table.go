package fakekube

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// Server-side printing: a client that sends
//
//	Accept: application/json;as=Table;v=v1;g=meta.k8s.io
//
// (kubectl get does) gets a meta.k8s.io Table instead of the object or list:
// the printer columns of printers.go, one row per object, and each row's
// object as PartialObjectMetadata (or, with ?includeObject=Object, whole;
// with None, not at all). Watches answer a one-row Table per event, with
// the column definitions in the first event only.

// tableOptions are the options of a Table request.
type tableOptions struct {
	// groupVersion is the Table's: meta.k8s.io/v1 or v1beta1, as asked.
	groupVersion  schema.GroupVersion
	includeObject metav1.IncludeObjectPolicy
	// noHeaders leaves out the column definitions.
	noHeaders bool
}

// tableOptionsFrom reads the includeObject query parameter and refuses the
// values the real server refuses, with its message.
func tableOptionsFrom(gv schema.GroupVersion, q url.Values) (tableOptions, error) {
	opts := tableOptions{groupVersion: gv, includeObject: metav1.IncludeObjectPolicy(q.Get("includeObject"))}
	switch opts.includeObject {
	case "", metav1.IncludeMetadata, metav1.IncludeObject, metav1.IncludeNone:
		return opts, nil
	}
	err := field.Invalid(field.NewPath("includeObject"), opts.includeObject, "must be 'Metadata', 'Object', 'None', or empty")
	return opts, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", err))
}

// tableConvertor turns objects and lists into Tables, as the real server's
// table convertors do.
type tableConvertor struct {
	// clock is the server's: ages count up to its now.
	clock clock.PassiveClock
	// storageClasses lists every StorageClass, so that a single one is
	// printed "(default)" only if it is the effective default. Without it,
	// a single class is judged by its own annotation.
	storageClasses func() []*storagev1.StorageClass
}

func (s *Server) tableConvertor() *tableConvertor {
	scRes := s.reg.byGVR[storageV1.WithResource("storageclasses")]
	return &tableConvertor{clock: s.clock, storageClasses: func() []*storagev1.StorageClass {
		if scRes == nil {
			return nil
		}
		objs, _ := s.store.list(scRes, selector{})
		classes := make([]*storagev1.StorageClass, 0, len(objs))
		for _, o := range objs {
			if sc, ok := o.(*storagev1.StorageClass); ok {
				classes = append(classes, sc)
			}
		}
		return classes
	}}
}

// tableConvertorFor finds the convertor of the server answering r, for
// responses written by functions that have no server at hand: over HTTP,
// net/http puts the serving http.Server in the request's context. Elsewhere
// (the in-process transport) it falls back to the real clock and to judging
// a single StorageClass by its own annotation.
func tableConvertorFor(r *http.Request) *tableConvertor {
	if s, ok := r.Context().Value(serverContextKey{}).(*Server); ok {
		return s.tableConvertor()
	}
	return &tableConvertor{clock: clock.RealClock{}}
}

// convert prints obj — one object or a list — as a Table.
func (c *tableConvertor) convert(obj runtime.Object, opts tableOptions) (*metav1.Table, error) {
	isList := meta.IsListType(obj)
	items := []runtime.Object{obj}
	if isList {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("reading the items to print: %w", err)
		}
	}
	kind := printedKind(obj, isList)
	printer, ok := kindPrinters[kind]
	if !ok {
		printer = defaultPrinter
	}
	pc := &printContext{now: c.clock.Now()}
	if kind == storageClassKind {
		pc.defaultClass = c.defaultClass(obj, isList, items)
	}

	table := &metav1.Table{Rows: make([]metav1.TableRow, 0, len(items))}
	table.SetGroupVersionKind(opts.groupVersion.WithKind("Table"))
	if !opts.noHeaders {
		table.ColumnDefinitions = printer.columns
	}
	for _, item := range items {
		row := printer.row(pc, item)
		var err error
		if row.Object, err = rowObject(item, opts); err != nil {
			return nil, err
		}
		table.Rows = append(table.Rows, row)
	}
	// A list's Table carries the list's resourceVersion, which kubectl get
	// --watch resumes from; a single object's carries the object's.
	if l, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
		table.RemainingItemCount = l.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

// printedKind is the kind whose printer prints obj (the item kind, for a list).
func printedKind(obj runtime.Object, isList bool) schema.GroupKind {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvks, _, err := scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		gvk = gvks[0]
	}
	gk := gvk.GroupKind()
	if isList {
		gk.Kind = strings.TrimSuffix(gk.Kind, "List")
	}
	return gk
}

// defaultClass is the StorageClass to print "(default)": the effective
// default among a list's items, or, for one class, among all classes.
func (c *tableConvertor) defaultClass(obj runtime.Object, isList bool, items []runtime.Object) string {
	var classes []*storagev1.StorageClass
	switch {
	case isList:
		for _, it := range items {
			if sc, ok := it.(*storagev1.StorageClass); ok {
				classes = append(classes, sc)
			}
		}
	case c.storageClasses != nil:
		classes = c.storageClasses()
	default:
		if sc, ok := obj.(*storagev1.StorageClass); ok && isDefaultClass(sc) {
			return sc.Name
		}
		return ""
	}
	return effectiveDefaultClass(classes)
}

// rowObject is what a row carries of its object: by default its metadata as
// a PartialObjectMetadata of the Table's group version.
func rowObject(obj runtime.Object, opts tableOptions) (runtime.RawExtension, error) {
	switch opts.includeObject {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		return runtime.RawExtension{Object: withKind(obj)}, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("reading the metadata of a row: %w", err)
	}
	partial := meta.AsPartialObjectMetadata(m)
	partial.SetGroupVersionKind(opts.groupVersion.WithKind("PartialObjectMetadata"))
	return runtime.RawExtension{Object: partial}, nil
}

// withKind returns obj with its apiVersion and kind set, copying it rather
// than changing an object the store may share.
func withKind(obj runtime.Object) runtime.Object {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		return obj
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(gvks[0])
	return c
}

// writeObject writes obj — or its Table, when the client asked for one —
// in the encoding the client accepts. A Status is never turned into a Table.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, conv *tableConvertor) {
	media := negotiateResponse(r.Header.Get("Accept"))
	out := obj
	if _, isStatus := obj.(*metav1.Status); media.table != nil && !isStatus {
		opts, err := tableOptionsFrom(*media.table, r.URL.Query())
		if err != nil {
			writeError(w, err)
			return
		}
		table, err := conv.convert(obj, opts)
		if err != nil {
			writeError(w, apierrors.NewInternalError(fmt.Errorf("printing a table: %w", err)))
			return
		}
		out = table
	}
	info := media.info
	if info.MediaType == runtime.ContentTypeProtobuf && !protobufCapable(out) {
		// Custom resources (the snapshot kinds) have no protobuf form: the
		// real server answers them in JSON, which clients accept too.
		info, _ = runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(out, &buf); err != nil {
		writeError(w, apierrors.NewInternalError(fmt.Errorf("encoding the response: %w", err)))
		return
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// protobufCapable: obj (or, for a list, its items) can be encoded as
// Kubernetes protobuf.
func protobufCapable(obj runtime.Object) bool {
	type protoMarshaler interface{ Marshal() ([]byte, error) }
	_, ok := obj.(protoMarshaler)
	return ok
}
