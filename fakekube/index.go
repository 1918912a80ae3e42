package fakekube

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef names one stored object: its resource and its namespace/name key.
type objectRef struct {
	res *resource
	key string
}

// refSet is a set of stored objects.
type refSet map[objectRef]struct{}

// gcIndex is what the garbage collector and the namespace controller look
// objects up by, kept up to date on every commit and removal, so that a
// collection costs what its candidates cost and not a scan of the store.
type gcIndex struct {
	// order ranks resources as the collector visits them (the registry's
	// order); objects of one resource go by key.
	order map[*resource]int
	// byUID finds an object by UID: whether an owner is still there.
	byUID map[types.UID]objectRef
	// dependents are the objects with an owner reference to a UID, whether
	// or not an object with that UID is stored.
	dependents map[types.UID]refSet
	// byNamespace are the objects of namespaced resources in a namespace.
	byNamespace map[string]refSet
	// candidates are the objects the collector may have to act on: being
	// deleted with the orphan or foregroundDeletion finalizer, terminating
	// namespaces, and dependents whose owners may all be gone. It may hold
	// more than that (the collector drops those it finds nothing to do
	// for), never less.
	candidates refSet
}

func newGCIndex(reg *registry) *gcIndex {
	idx := &gcIndex{
		order:       map[*resource]int{},
		byUID:       map[types.UID]objectRef{},
		dependents:  map[types.UID]refSet{},
		byNamespace: map[string]refSet{},
		candidates:  refSet{},
	}
	for i, r := range reg.all {
		idx.order[r] = i
	}
	return idx
}

// compare orders objects as the collector visits them.
func (idx *gcIndex) compare(a, b objectRef) int {
	if c := cmp.Compare(idx.order[a.res], idx.order[b.res]); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

// sorted returns the members of set in the collector's order.
func (idx *gcIndex) sorted(set refSet) []objectRef {
	out := make([]objectRef, 0, len(set))
	for ref := range set {
		out = append(out, ref)
	}
	slices.SortFunc(out, idx.compare)
	return out
}

// stored records that obj is now stored under ref, replacing old (nil for
// a new object).
func (idx *gcIndex) stored(ref objectRef, old, obj runtime.Object) {
	m, _ := meta.Accessor(obj)
	if old == nil {
		idx.byUID[m.GetUID()] = ref
		if ref.res.namespaced {
			addTo(idx.byNamespace, m.GetNamespace(), ref)
		}
	} else {
		om, _ := meta.Accessor(old)
		idx.dropOwners(ref, om)
	}
	for _, owner := range m.GetOwnerReferences() {
		addTo(idx.dependents, owner.UID, ref)
	}
	if idx.needsCollector(obj) {
		idx.candidates[ref] = struct{}{}
	}
}

// removed records that obj, stored under ref, is gone. Its dependents may
// now have no owner left, so they become candidates.
func (idx *gcIndex) removed(ref objectRef, obj runtime.Object) {
	m, _ := meta.Accessor(obj)
	delete(idx.byUID, m.GetUID())
	if ref.res.namespaced {
		removeFrom(idx.byNamespace, m.GetNamespace(), ref)
	}
	idx.dropOwners(ref, m)
	delete(idx.candidates, ref)
	for dep := range idx.dependents[m.GetUID()] {
		idx.candidates[dep] = struct{}{}
	}
}

func (idx *gcIndex) dropOwners(ref objectRef, m metav1.Object) {
	for _, owner := range m.GetOwnerReferences() {
		removeFrom(idx.dependents, owner.UID, ref)
	}
}

// needsCollector says whether the collector may have something to do for
// obj as the store holds it now.
func (idx *gcIndex) needsCollector(obj runtime.Object) bool {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil {
		return len(m.GetOwnerReferences()) > 0 && !idx.anyOwnerStored(m.GetOwnerReferences())
	}
	if _, ok := obj.(*corev1.Namespace); ok {
		return true
	}
	return slices.Contains(m.GetFinalizers(), metav1.FinalizerOrphanDependents) ||
		slices.Contains(m.GetFinalizers(), metav1.FinalizerDeleteDependents)
}

func (idx *gcIndex) anyOwnerStored(refs []metav1.OwnerReference) bool {
	for _, ref := range refs {
		if _, ok := idx.byUID[ref.UID]; ok {
			return true
		}
	}
	return false
}

func addTo[K comparable](sets map[K]refSet, k K, ref objectRef) {
	set := sets[k]
	if set == nil {
		set = refSet{}
		sets[k] = set
	}
	set[ref] = struct{}{}
}

func removeFrom[K comparable](sets map[K]refSet, k K, ref objectRef) {
	set := sets[k]
	delete(set, ref)
	if len(set) == 0 {
		delete(sets, k)
	}
}
