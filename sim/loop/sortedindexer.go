package loop

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// sortedIndexer is an Indexer whose lists come in key order instead of map
// order, so that controllers iterate deterministically.
//
// It keeps its sorted List until the next change to the cache: a kubelet
// lists its node's pods many times between two writes, and sorting every
// time cost more than the lookups (each List made every object's key and
// sorted them). Every change goes through Add, Update, Delete, Replace or
// Resync here, which drop what is kept; a caller gets a copy of the kept
// slice, which it may modify.
type sortedIndexer struct {
	cache.Indexer
	kept *sortedLists
}

type sortedLists struct {
	mu  sync.Mutex
	all []any // nil when not kept
}

func newSortedIndexer() cache.Indexer {
	return sortedIndexer{
		Indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		kept:    &sortedLists{},
	}
}

// changed forgets the kept list.
func (s sortedIndexer) changed() {
	s.kept.mu.Lock()
	s.kept.all = nil
	s.kept.mu.Unlock()
}

func (s sortedIndexer) Add(obj any) error {
	defer s.changed()
	return s.Indexer.Add(obj)
}

func (s sortedIndexer) Update(obj any) error {
	defer s.changed()
	return s.Indexer.Update(obj)
}

func (s sortedIndexer) Delete(obj any) error {
	defer s.changed()
	return s.Indexer.Delete(obj)
}

func (s sortedIndexer) Replace(list []any, rv string) error {
	defer s.changed()
	return s.Indexer.Replace(list, rv)
}

func (s sortedIndexer) Resync() error {
	defer s.changed()
	return s.Indexer.Resync()
}

func (s sortedIndexer) AddIndexers(newIndexers cache.Indexers) error {
	defer s.changed()
	return s.Indexer.AddIndexers(newIndexers)
}

func (s sortedIndexer) List() []any {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	if s.kept.all == nil {
		s.kept.all = sortByKey(s.Indexer.List())
	}
	return slices.Clone(s.kept.all)
}

// ListAnyOrder is List in the cache's own order, for callers that want
// only the set of objects.
func (s sortedIndexer) ListAnyOrder() []any { return s.Indexer.List() }

// ByIndex is not kept: most lookups are for a value that changes with
// every write (each of a hundred kubelets asks for the pods of every claim
// that changes), so keeping them cost more than it saved. Nearly all find
// no object or one, which need no sorting.
func (s sortedIndexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	objs, err := s.Indexer.ByIndex(indexName, indexedValue)
	return sortByKey(objs), err
}

func (s sortedIndexer) Index(indexName string, obj any) ([]any, error) {
	objs, err := s.Indexer.Index(indexName, obj)
	return sortByKey(objs), err
}

func sortByKey(objs []any) []any {
	if len(objs) < 2 {
		return objs
	}
	type keyed struct {
		key string
		obj any
	}
	ks := make([]keyed, len(objs))
	for i, o := range objs {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		ks[i] = keyed{k, o}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ks {
		objs[i] = ks[i].obj
	}
	return objs
}
