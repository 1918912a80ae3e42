package fakekube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// Write describes one accepted write, for the run's timeline.
type Write struct {
	Actor     string // the client's user agent: which component wrote
	Verb      string // create, update, patch, delete, bind
	Resource  string // plural resource name, e.g. persistentvolumeclaims
	GVR       schema.GroupVersionResource
	Kind      string
	Namespace string
	Name      string
	// Subresource is "status" or "binding" when the write went there.
	Subresource string
	// Object is the object as stored after the write (for a removal, as it was
	// last stored). Callers must not modify it.
	Object runtime.Object
	// Removed is true when the write took the object out of the store.
	Removed bool
}

// store holds the server's objects. One mutex orders every write, as etcd's
// single revision counter does, so resourceVersions are a total order and a
// watcher resumed from any of them misses nothing.
type store struct {
	reg     *registry
	clock   clock.PassiveClock
	rand    *rand.Rand
	onWrite func(Write)
	// onRefused hears of writes refused by RefuseConflicting.
	onRefused func(Write, error)
	// refuse is Options.Refuse (admission.go, ownAdmissionLocked).
	refuse RefuseFunc
	// tolerationSeconds is Options.DefaultTolerationSeconds.
	tolerationSeconds int64

	mu        sync.Mutex
	rv        uint64
	objects   map[*resource]map[string]runtime.Object // key: namespace/name
	history   history
	gcPending bool // a write since the last collection may give the collector work
	gc        *gcIndex
	watchers  map[*watcher]struct{}
	refusals  map[string]int // writes with a resourceVersion to refuse, by actor
	eventTTL  time.Duration  // how long an Event lives after its last write; 0: for ever
	expiries  expiries
	// fieldManagers keep the objects' managedFields (managedfields.go).
	fieldManagers map[fieldManagerKey]*managedfields.FieldManager
}

func newStore(reg *registry, opts Options) *store {
	s := &store{
		reg:               reg,
		clock:             opts.Clock,
		rand:              rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		onWrite:           opts.OnWrite,
		onRefused:         opts.OnRefused,
		refuse:            opts.Refuse,
		tolerationSeconds: cmp.Or(opts.DefaultTolerationSeconds, defaultTolerationSeconds),
		refusals:          map[string]int{},
		objects:           map[*resource]map[string]runtime.Object{},
		history:           history{limit: opts.HistoryLimit},
		watchers:          map[*watcher]struct{}{},
		gc:                newGCIndex(reg),
		eventTTL:          max(opts.EventTTL, 0),

		fieldManagers: map[fieldManagerKey]*managedfields.FieldManager{},
	}
	for _, r := range reg.all {
		s.objects[r] = map[string]runtime.Object{}
	}
	return s
}

func objectKey(namespace, name string) string { return namespace + "/" + name }

// currentRV is the store's resourceVersion: that of the last write.
func (s *store) currentRV() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.rv, 10)
}

func (s *store) now() metav1.Time {
	return metav1.NewTime(s.clock.Now()).Rfc3339Copy()
}

// newUID returns a version-4 UUID drawn from the store's seeded generator,
// so a run with the same seed hands out the same UIDs.
func (s *store) newUID() types.UID {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := s.rand.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

// generatedNameSuffix mirrors the real server's SimpleNameGenerator: five
// characters from an alphabet without vowels or look-alike digits.
func (s *store) generatedNameSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[s.rand.IntN(len(alphabet))]
	}
	return string(b)
}

func (s *store) get(res *resource, namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	obj, ok := s.objects[res][objectKey(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(res.groupResource(), name)
	}
	return obj.DeepCopyObject(), nil
}

// selector is a list or watch filter.
type selector struct {
	namespace string // "" means all namespaces
	labels    labels.Selector
	fields    fields.Selector
}

func (sel selector) matches(res *resource, obj runtime.Object) bool {
	m, _ := meta.Accessor(obj)
	if sel.namespace != "" && m.GetNamespace() != sel.namespace {
		return false
	}
	if sel.labels != nil && !sel.labels.Empty() && !sel.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if sel.fields != nil && !sel.fields.Empty() && !sel.fields.Matches(fieldSet(res, obj)) {
		return false
	}
	return true
}

// fieldSet is the set of field labels the real server supports for a kind.
func fieldSet(res *resource, obj runtime.Object) fields.Set {
	m, _ := meta.Accessor(obj)
	set := fields.Set{"metadata.name": m.GetName()}
	if res.namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	if res.fields != nil {
		for k, v := range res.fields(obj) {
			set[k] = v
		}
	}
	return set
}

// list returns deep copies of the matching objects, sorted by namespace and
// name as etcd returns them, and the resourceVersion of the list.
func (s *store) list(res *resource, sel selector) ([]runtime.Object, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return s.listLocked(res, sel), strconv.FormatUint(s.rv, 10)
}

func (s *store) listLocked(res *resource, sel selector) []runtime.Object {
	// Filter first: a selective list (a kubelet's pods by spec.nodeName)
	// then sorts and copies only what it returns.
	var keys []string
	for k, obj := range s.objects[res] {
		if sel.matches(res, obj) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []runtime.Object
	for _, k := range keys {
		out = append(out, s.objects[res][k].DeepCopyObject())
	}
	return out
}

// create stores a new object after defaulting, admission and validation.
// ctx carries the request's warning recorder, if any. manager is the field
// manager its fields are recorded for, "" when the caller has recorded
// them (server-side apply).
func (s *store) create(ctx context.Context, actor, manager string, res *resource, namespace string, obj runtime.Object) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createLocked(ctx, actor, manager, res, namespace, obj)
}

func (s *store) createLocked(ctx context.Context, actor, manager string, res *resource, namespace string, obj runtime.Object) (runtime.Object, error) {
	s.expireLocked()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := s.checkNamespaceLocked(res, namespace, m); err != nil {
		return nil, err
	}
	defaultObject(res, obj)
	// As kube-apiserver's create handler, the field manager sees the
	// object as decoded, before admission and the strategy.
	if manager != "" {
		if obj, err = s.recordUpdateLocked(res, "", nil, obj, manager); err != nil {
			return nil, err
		}
		if m, err = meta.Accessor(obj); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	if err := s.admitCreateLocked(res, obj); err != nil {
		return nil, err
	}
	// The registry names the object after admission, before its strategy.
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + s.generatedNameSuffix())
	}
	m.SetGeneration(0)
	// As in the real server, the strategy comes before the store is
	// asked: an invalid object is Invalid even when its name is taken.
	obj, err = prepareCreate(ctx, res, namespace, obj, s.now())
	if err != nil {
		return nil, err
	}
	if err := s.ownAdmissionLocked(res, obj, nil); err != nil {
		return nil, err
	}
	if m, err = meta.Accessor(obj); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	key := objectKey(m.GetNamespace(), m.GetName())
	if _, exists := s.objects[res][key]; exists {
		if m.GetGenerateName() != "" {
			// k8s.io/apiserver pkg/registry/rest/create.go, CheckGeneratedNameError.
			return nil, apierrors.NewGenerateNameConflict(res.groupResource(), m.GetName(), 1)
		}
		return nil, apierrors.NewAlreadyExists(res.groupResource(), m.GetName())
	}
	if err := checkStorable(res, obj); err != nil {
		return nil, err
	}
	m.SetUID(s.newUID())
	m.SetCreationTimestamp(s.now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	s.commitLocked(actor, "create", "", res, nil, obj)
	return obj.DeepCopyObject(), nil
}

// checkNamespaceLocked enforces that namespaced objects name an existing
// namespace matching the request, and cluster-scoped ones name none.
func (s *store) checkNamespaceLocked(res *resource, namespace string, m metav1.Object) error {
	if !res.namespaced {
		m.SetNamespace("")
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(namespace)
	}
	if m.GetNamespace() != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	nsRes := s.reg.byGVR[coreV1.WithResource("namespaces")]
	ns, ok := s.objects[nsRes][objectKey("", namespace)]
	if !ok {
		return apierrors.NewNotFound(nsRes.groupResource(), namespace)
	}
	if ns.(*corev1.Namespace).DeletionTimestamp != nil {
		return apierrors.NewForbidden(res.groupResource(), m.GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	}
	return nil
}

// update replaces an object (subresource "") or its status ("status").
// mutate, when set, computes the new object from a copy of the stored one
// under the store's lock; that is how patches apply without races.
// conditional says the write carries a resourceVersion (an update's
// object, a patch that sets it), so that it can meet a conflict. manager
// is as create's.
func (s *store) update(ctx context.Context, actor, manager, verb string, res *resource, namespace, name, subresource string,
	newObj runtime.Object, mutate func(current runtime.Object) (runtime.Object, error), conditional bool) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	key := objectKey(namespace, name)
	old, ok := s.objects[res][key]
	if !ok {
		return nil, apierrors.NewNotFound(res.groupResource(), name)
	}
	if mutate != nil {
		var err error
		if newObj, err = mutate(old.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	// The real server defaults every body it decodes, an update's and a
	// patched object's as much as a create's: a claim written back
	// without spec.volumeMode is the claim with Filesystem.
	defaultObject(res, newObj)
	oldMeta, _ := meta.Accessor(old)
	newMeta, err := meta.Accessor(newObj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if newMeta.GetName() != "" && newMeta.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", newMeta.GetName(), name))
	}
	if res.namespaced && newMeta.GetNamespace() != "" && newMeta.GetNamespace() != namespace {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if rv := newMeta.GetResourceVersion(); rv != "" && rv != oldMeta.GetResourceVersion() {
		return nil, conflict(res, name)
	}
	if conditional {
		if err := s.refuseLocked(actor, verb, res, namespace, name, subresource); err != nil {
			return nil, err
		}
	}
	if uid := newMeta.GetUID(); uid != "" && uid != oldMeta.GetUID() {
		return nil, preconditionFailed(res, namespace, name, "UID", uid, oldMeta.GetUID())
	}

	// What no write changes; the strategy keeps the rest of the system
	// metadata (rest.BeforeUpdate) and of the spec or status what the
	// subresource may not change.
	newMeta.SetNamespace(oldMeta.GetNamespace())
	newMeta.SetName(oldMeta.GetName())
	newMeta.SetResourceVersion(oldMeta.GetResourceVersion())
	// As kube-apiserver's update and patch handlers, the field manager
	// sees the object as the client wrote it, before admission and the
	// strategy.
	if manager != "" {
		if newObj, err = s.recordUpdateLocked(res, subresource, old, newObj, manager); err != nil {
			return nil, err
		}
	}
	next := newObj
	switch subresource {
	case "binding":
		// The real binding storage changes the pod itself, with no
		// strategy: serveBinding's mutate is all of it.
	case "":
		admitUpdate(newObj, old, s.tolerationSeconds)
		if next, err = prepareUpdate(ctx, res, namespace, subresource, newObj, old, s.now()); err != nil {
			return nil, err
		}
		// Validating admission runs after the strategy's validation.
		if err := s.validateAdmissionLocked(res, name, next, old); err != nil {
			return nil, err
		}
	default:
		if next, err = prepareUpdate(ctx, res, namespace, subresource, newObj, old, s.now()); err != nil {
			return nil, err
		}
	}
	// Like the real server, an update that changes nothing is not a write:
	// no new resourceVersion, no watch event.
	if apiequality.Semantic.DeepEqual(next, old) {
		return old.DeepCopyObject(), nil
	}
	if err := checkStorable(res, next); err != nil {
		return nil, err
	}
	s.commitLocked(actor, verb, subresource, res, old, next)
	out := s.finishDeletionLocked(actor, res, next)
	s.collectGarbageLocked()
	return out, nil
}

// finishDeletionLocked removes an object whose deletion is due: it has a
// deletionTimestamp, no finalizers and no grace period left to run.
func (s *store) finishDeletionLocked(actor string, res *resource, obj runtime.Object) runtime.Object {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return obj.DeepCopyObject()
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return obj.DeepCopyObject()
	}
	s.removeLocked(actor, res, obj)
	return obj.DeepCopyObject()
}

func (s *store) removeLocked(actor string, res *resource, obj runtime.Object) {
	gone := s.dropLocked(res, obj)
	gm, _ := meta.Accessor(gone)
	s.notifyWrite(Write{Actor: actor, Verb: "delete", Resource: res.gvr.Resource, GVR: res.gvr, Kind: res.kind,
		Namespace: gm.GetNamespace(), Name: gm.GetName(), Object: gone, Removed: true})
}

// dropLocked takes obj out of the store, tells watchers, and returns it as
// it was last stored, with the resourceVersion of its removal.
func (s *store) dropLocked(res *resource, obj runtime.Object) runtime.Object {
	m, _ := meta.Accessor(obj)
	key := objectKey(m.GetNamespace(), m.GetName())
	if prev, ok := s.objects[res][key]; ok {
		s.gc.removed(objectRef{res: res, key: key}, prev)
	}
	delete(s.objects[res], key)
	s.gcPending = true
	s.rv++
	gone := obj.DeepCopyObject()
	gone.GetObjectKind().SetGroupVersionKind(res.gvk())
	gm, _ := meta.Accessor(gone)
	gm.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	s.publishLocked(&event{typ: watch.Deleted, res: res, obj: gone, rv: s.rv})
	return gone
}

// delete deletes an object the way the real server does: at once when
// nothing holds it, otherwise by setting deletionTimestamp and leaving it to
// its finalizers (or, for a pod on a node, to its kubelet's grace period).
func (s *store) delete(actor string, res *resource, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	obj, err := s.deleteLocked(actor, res, namespace, name, opts)
	if err == nil {
		s.collectGarbageLocked()
	}
	return obj, err
}

func (s *store) deleteLocked(actor string, res *resource, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, error) {
	key := objectKey(namespace, name)
	cur, ok := s.objects[res][key]
	if !ok {
		return nil, apierrors.NewNotFound(res.groupResource(), name)
	}
	m, _ := meta.Accessor(cur)
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != m.GetUID() {
			return nil, preconditionFailed(res, namespace, name, "UID", *p.UID, m.GetUID())
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
			return nil, preconditionFailed(res, namespace, name, "ResourceVersion", *p.ResourceVersion, m.GetResourceVersion())
		}
	}
	if res.gvr == coreV1.WithResource("namespaces") && undeletableNamespaces[name] {
		// The NamespaceLifecycle admission plugin
		// (kubernetes plugin/pkg/admission/namespace/lifecycle/admission.go).
		return nil, apierrors.NewForbidden(res.groupResource(), name, errors.New("this namespace may not be deleted"))
	}
	grace := gracePeriod(cur, opts)
	next := cur.DeepCopyObject()
	nm, _ := meta.Accessor(next)

	if dt := m.GetDeletionTimestamp(); dt != nil {
		// Already being deleted: a shorter grace period may hurry it along.
		cg := m.GetDeletionGracePeriodSeconds()
		if cg == nil || grace >= *cg {
			return cur.DeepCopyObject(), nil
		}
		nm.SetDeletionGracePeriodSeconds(&grace)
		t := metav1.NewTime(s.clock.Now().Add(secondsDuration(grace))).Rfc3339Copy()
		nm.SetDeletionTimestamp(&t)
		s.commitLocked(actor, "delete", "", res, cur, next)
		return s.finishDeletionLocked(actor, res, next), nil
	}

	policy, err := propagationPolicy(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case policy == metav1.DeletePropagationForeground:
		addFinalizerTo(nm, metav1.FinalizerDeleteDependents)
	case policy == metav1.DeletePropagationOrphan:
		addFinalizerTo(nm, metav1.FinalizerOrphanDependents)
	}
	if ns, ok := next.(*corev1.Namespace); ok {
		// The namespace controller empties it, then lets it go.
		ns.Status.Phase = corev1.NamespaceTerminating
	} else if grace == 0 && len(nm.GetFinalizers()) == 0 {
		s.removeLocked(actor, res, cur)
		return cur.DeepCopyObject(), nil
	}
	t := metav1.NewTime(s.clock.Now().Add(secondsDuration(grace))).Rfc3339Copy()
	nm.SetDeletionTimestamp(&t)
	nm.SetDeletionGracePeriodSeconds(&grace)
	s.commitLocked(actor, "delete", "", res, cur, next)
	return next.DeepCopyObject(), nil
}

// gracePeriod is the grace a deletion gets: only pods that may still have
// running containers on a node get one; everything else goes at once.
func gracePeriod(obj runtime.Object, opts metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		if *opts.GracePeriodSeconds < 0 {
			return 1
		}
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// commitLocked gives obj the next resourceVersion, stores it and tells
// watchers and the write hook.
func (s *store) commitLocked(actor, verb, subresource string, res *resource, old, obj runtime.Object) {
	s.rv++
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	stored := obj.DeepCopyObject()
	stored.GetObjectKind().SetGroupVersionKind(res.gvk())
	if m.GetDeletionTimestamp() != nil {
		s.gcPending = true
	}
	key := objectKey(m.GetNamespace(), m.GetName())
	// The index replaces what is stored now: old is that, except for the
	// collector, which may hold an older copy.
	ref := objectRef{res: res, key: key}
	s.gc.stored(ref, s.objects[res][key], stored)
	s.objects[res][key] = stored
	s.scheduleExpiryLocked(ref, s.rv)
	typ := watch.Modified
	if old == nil {
		typ = watch.Added
	}
	s.publishLocked(&event{typ: typ, res: res, obj: stored, old: old, rv: s.rv})
	s.notifyWrite(Write{Actor: actor, Verb: verb, Resource: res.gvr.Resource, GVR: res.gvr, Kind: res.kind,
		Namespace: m.GetNamespace(), Name: m.GetName(), Subresource: subresource, Object: stored})
}

func (s *store) notifyWrite(w Write) {
	if s.onWrite != nil {
		s.onWrite(w)
	}
}

func conflict(res *resource, name string) error {
	return apierrors.NewConflict(res.groupResource(), name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }
