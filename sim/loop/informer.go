package loop

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Informer is a cache.SharedIndexInformer that the Loop feeds itself: it is
// filled from the API server's store when made, and then told of every
// write by the loop, in resourceVersion order, calling its handlers on the
// loop's goroutine. Controllers get it from their SharedInformerFactory as
// usual (the cluster registers it there first), so they run unchanged.
type Informer struct {
	loop     *Loop
	gvr      schema.GroupVersionResource
	fields   fields.Selector
	indexer  cache.Indexer
	mu       sync.Mutex
	handlers []*registration
	rv       string
	stopped  bool
	seq      int // its place among its resource's informers (route.go)

	// For DropWatchEvents: whose informer it is, its broken watch if any,
	// and its reflector's backoff.
	component string
	drop      *watchDrop
	backoff   reflectorBackoff
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

type registration struct{ handler cache.ResourceEventHandler }

func (r *registration) HasSynced() bool                       { return true }
func (r *registration) HasSyncedChecker() cache.DoneChecker   { return doneChecker{} }
func (i *Informer) HasSyncedChecker() cache.DoneChecker       { return doneChecker{} }
func (i *Informer) HasSynced() bool                           { return true }
func (i *Informer) GetStore() cache.Store                     { return i.indexer }
func (i *Informer) GetIndexer() cache.Indexer                 { return i.indexer }
func (i *Informer) GetController() cache.Controller           { return nil }
func (i *Informer) AddIndexers(indexers cache.Indexers) error { return i.indexer.AddIndexers(indexers) }
func (i *Informer) SetTransform(cache.TransformFunc) error {
	return fmt.Errorf("transforms are not supported")
}
func (i *Informer) SetWatchErrorHandler(cache.WatchErrorHandler) error { return nil }
func (i *Informer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return nil
}

// doneChecker is done at once: the cache is filled when the informer is made.
type doneChecker struct{}

func (doneChecker) Name() string { return "loop informer" }
func (doneChecker) Done() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Run blocks until stop: the loop, not the informer, does the work.
func (i *Informer) Run(stop <-chan struct{}) {
	<-stop
	i.mu.Lock()
	i.stopped = true
	i.mu.Unlock()
}

// RunWithContext is Run with a context.
func (i *Informer) RunWithContext(ctx context.Context) { i.Run(ctx.Done()) }

// IsStopped reports whether Run has returned.
func (i *Informer) IsStopped() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stopped
}

// LastSyncResourceVersion is the resourceVersion of the last write seen.
func (i *Informer) LastSyncResourceVersion() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rv
}

// AddEventHandler registers h and, as client-go does, tells it of every
// object already in the cache.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	reg := &registration{handler: h}
	i.mu.Lock()
	i.handlers = append(i.handlers, reg)
	i.mu.Unlock()
	for _, obj := range sortedObjects(i.indexer) {
		h.OnAdd(obj, true)
	}
	return reg, nil
}

// AddEventHandlerWithResyncPeriod ignores the period: no resyncs.
func (i *Informer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// AddEventHandlerWithOptions ignores the options.
func (i *Informer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(h)
}

// RemoveEventHandler unregisters a handler.
func (i *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	for n, r := range i.handlers {
		if r == handle {
			i.handlers = append(i.handlers[:n], i.handlers[n+1:]...)
			return nil
		}
	}
	return nil
}

// observe applies one write to the cache and tells the handlers: an object
// that starts or stops matching the field selector is added or deleted.
func (i *Informer) observe(obj runtime.Object, removed bool, rv string, matches bool) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	old, had, _ := i.indexer.GetByKey(key)
	if (matches || had) && i.lose() {
		return // a broken watch: see DropWatchEvents
	}
	i.mu.Lock()
	i.rv = rv
	handlers := append([]*registration(nil), i.handlers...)
	i.mu.Unlock()
	switch {
	case !removed && matches && had:
		_ = i.indexer.Update(obj)
		for _, h := range handlers {
			h.handler.OnUpdate(old, obj)
		}
	case !removed && matches:
		_ = i.indexer.Add(obj)
		for _, h := range handlers {
			h.handler.OnAdd(obj, false)
		}
	case had:
		_ = i.indexer.Delete(old)
		for _, h := range handlers {
			h.handler.OnDelete(old)
		}
	}
}

// sortedObjects lists a cache's objects by key, for a stable order.
func sortedObjects(store cache.Store) []any {
	keys := store.ListKeys()
	sortStrings(keys)
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		if obj, ok, _ := store.GetByKey(k); ok {
			out = append(out, obj)
		}
	}
	return out
}

// fill loads the informer's cache from the API server's store.
func (i *Informer) fill() error {
	items, rv, err := i.loop.api.List(i.gvr, "", labels.Everything(), i.fields)
	if err != nil {
		return fmt.Errorf("filling the informer for %s: %w", i.gvr.Resource, err)
	}
	for _, obj := range items {
		if _, err := meta.Accessor(obj); err == nil {
			_ = i.indexer.Add(obj)
		}
	}
	i.rv = rv
	return nil
}
