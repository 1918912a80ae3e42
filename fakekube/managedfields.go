package fakekube

// Field management: the metadata.managedFields kube-apiserver keeps on
// every create, update and patch, and server-side apply, both by
// apimachinery's own field manager (k8s.io/apimachinery
// pkg/util/managedfields), set up for each resource and subresource as
// kube-apiserver sets it up (k8s.io/apiserver pkg/endpoints/installer.go:
// the type converter of the served OpenAPI models, the strategy's reset
// fields) and called where its handlers call it (pkg/endpoints/handlers
// create.go, update.go, patch.go).

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/csisim/csisim/fakekube/crdschemas"
)

// typeConverter turns the served kinds into the typed values the field
// manager compares, from the same OpenAPI models /openapi/v3 serves (the
// custom kinds' from their CRDs), as kube-apiserver builds it from its
// models. It depends on nothing but the kinds fakekube serves, hence once
// per process.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	schemas, err := openAPIModelSchemas(newRegistry(defaultResources()))
	if err != nil {
		return nil, err
	}
	return managedfields.NewTypeConverter(schemas, false)
})

// openAPIModelSchemas are the schemas of every kind reg serves, by model
// name.
func openAPIModelSchemas(reg *registry) (map[string]*spec.Schema, error) {
	crds, err := crdKindsByGVK()
	if err != nil {
		return nil, err
	}
	schemas := map[string]*spec.Schema{}
	var models []string
	for _, r := range reg.all {
		if !r.crd {
			m := resourceModels(r)
			models = append(models, m.object, m.list)
			models = append(models, m.subresources...)
		} else if k, ok := crds[r.gvk()]; ok {
			addCRDSchemas(schemas, k, crdModels(r), r.gvr.Resource)
		}
	}
	built, err := buildModelSchemas(models)
	if err != nil {
		return nil, err
	}
	for name, s := range built {
		schemas[name] = s
	}
	return schemas, nil
}

// crdKindsByGVK are the custom kinds' schemas by group-version-kind.
func crdKindsByGVK() (map[schema.GroupVersionKind]crdschemas.Kind, error) {
	kinds, err := crdschemas.Kinds()
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]crdschemas.Kind{}
	for _, k := range kinds {
		out[k.GVK] = k
	}
	return out, nil
}

// fieldManagerKey names the field manager of a resource or subresource.
type fieldManagerKey struct {
	res         *resource
	subresource string
}

// fieldManagerLocked is the field manager of res's subresource ("" for
// the resource itself), made on first use.
func (s *store) fieldManagerLocked(res *resource, subresource string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{res: res, subresource: subresource}
	if fm := s.fieldManagers[key]; fm != nil {
		return fm, nil
	}
	tc, err := typeConverter()
	if err != nil {
		return nil, fmt.Errorf("the type converter of the field manager: %w", err)
	}
	st, err := strategyFor(res)
	if err != nil {
		return nil, err
	}
	var strategy any = st.main
	if subresource == "status" {
		strategy = st.status
	}
	// The fields the strategy resets (a main resource's status, a status
	// subresource's spec) are nobody's in a write to it.
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if r, ok := strategy.(rest.ResetFieldsStrategy); ok {
		reset = fieldpath.NewExcludeFilterSetMap(r.GetResetFields())
	}
	newManager := managedfields.NewDefaultFieldManager
	var defaulter runtime.ObjectDefaulter = legacyscheme.Scheme
	if res.crd {
		newManager = managedfields.NewDefaultCRDFieldManager
		defaulter = scheme
	}
	// The stored objects are in the served version: it is the field
	// manager's hub as the internal version is kube-apiserver's.
	fm, err := newManager(tc, scheme, defaulter, scheme, res.gvk(), res.gvr.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, err
	}
	s.fieldManagers[key] = fm
	return fm, nil
}

// recordUpdateLocked returns obj, written by manager over live (nil for a
// create), with its managedFields as kube-apiserver's field manager
// leaves them: the fields manager set or changed are its, in an Update
// entry. As the real server, it keeps live's managedFields if the field
// manager fails.
func (s *store) recordUpdateLocked(res *resource, subresource string, live, obj runtime.Object, manager string) (runtime.Object, error) {
	fm, err := s.fieldManagerLocked(res, subresource)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if live == nil {
		if live, err = scheme.New(res.gvk()); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	return s.onVirtualClock(live, obj, func(live, obj runtime.Object) (runtime.Object, error) {
		return fm.UpdateNoErrors(live, obj, manager), nil
	})
}

// applyLocked merges the applied configuration patch into live (an empty
// object for a create), as server-side apply by manager: the fields it
// names become manager's, in an Apply entry, unless another manager holds
// one of them at another value, a conflict (409) that force overrides.
func (s *store) applyLocked(res *resource, subresource string, live runtime.Object, patch *unstructured.Unstructured,
	manager string, force bool) (runtime.Object, error) {
	fm, err := s.fieldManagerLocked(res, subresource)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return s.onVirtualClock(live, patch, func(live, patch runtime.Object) (runtime.Object, error) {
		return fm.Apply(live, patch, manager, force)
	})
}

// onVirtualClock runs a field manager's write of obj over live and gives
// the entries it changed the server's time: the field manager stamps them
// with the real clock (managedfields internal/managedfieldsupdater.go),
// and a run on the virtual clock must write the same bytes every time.
// Before the write every entry's time is replaced by a mark in 1970 that
// keeps the times' order (the field manager sorts entries and picks the
// oldest by time); after it, a marked entry gets its own time back and
// any other the server's clock. live is left as it is (it may be the
// stored object); obj's entries are its to change.
func (s *store) onVirtualClock(live, obj runtime.Object, write func(live, obj runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	live = live.DeepCopyObject()
	var metas []metav1.Object
	for _, o := range []runtime.Object{live, obj} {
		if m, err := meta.Accessor(o); err == nil {
			metas = append(metas, m)
		}
	}
	times := newTimeMarks(metas)
	out, err := write(live, obj)
	if err != nil || out == nil {
		return out, err
	}
	m, err := meta.Accessor(out)
	if err != nil {
		return out, nil
	}
	entries := m.GetManagedFields()
	now := s.now()
	for i := range entries {
		entries[i].Time = times.restore(entries[i].Time, now)
	}
	sortManagedFields(entries)
	return out, nil
}

// timeMarks are the marks onVirtualClock gives the entries' times: the
// n-th distinct time, in order, is marked n seconds after 1970 began.
type timeMarks map[int64]*metav1.Time

// markedBefore: a time before it is a mark, any other one the field
// manager's own.
var markedBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// newTimeMarks marks the times of the entries of metas, each given a
// copy of its entries.
func newTimeMarks(metas []metav1.Object) timeMarks {
	var seconds []int64
	for _, m := range metas {
		for _, e := range m.GetManagedFields() {
			if e.Time != nil {
				seconds = append(seconds, e.Time.Unix())
			}
		}
	}
	slices.Sort(seconds)
	seconds = slices.Compact(seconds)
	marks := timeMarks{}
	for _, m := range metas {
		entries := slices.Clone(m.GetManagedFields())
		for i, e := range entries {
			if e.Time == nil {
				continue
			}
			mark := int64(1 + slices.Index(seconds, e.Time.Unix()))
			marks[mark] = e.Time
			entries[i].Time = &metav1.Time{Time: time.Unix(mark, 0).UTC()}
		}
		m.SetManagedFields(entries)
	}
	return marks
}

// restore is the time an entry written with time t has: its own if t is
// a mark, else now.
func (tm timeMarks) restore(t *metav1.Time, now metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	if t.Time.Before(markedBefore) {
		if was, ok := tm[t.Unix()]; ok {
			return was
		}
	}
	return &now
}

// sortManagedFields puts entries in the field manager's order, by
// operation, time, manager, apiVersion and subresource (k8s.io/apimachinery
// pkg/util/managedfields/internal/managedfields.go, sortEncodedManagedFields):
// with their times restored an entry may have moved.
func sortManagedFields(entries []metav1.ManagedFieldsEntry) {
	seconds := func(t *metav1.Time) int64 {
		if t == nil {
			return 0
		}
		return t.Unix()
	}
	slices.SortFunc(entries, func(p, q metav1.ManagedFieldsEntry) int {
		return cmp.Or(cmp.Compare(p.Operation, q.Operation), cmp.Compare(seconds(p.Time), seconds(q.Time)),
			cmp.Compare(p.Manager, q.Manager), cmp.Compare(p.APIVersion, q.APIVersion), cmp.Compare(p.Subresource, q.Subresource))
	})
}

// managerOf is the field manager a write is recorded for: the fieldManager
// parameter, else the user agent up to its first slash, without
// unprintable characters and at most 128 bytes long (k8s.io/apiserver
// pkg/endpoints/handlers/create.go, managerOrUserAgent and
// prefixFromUserAgent).
func managerOf(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
