package fakekube

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// event is one change in the store's history. Its object is never modified
// after it is published.
type event struct {
	typ watch.EventType
	res *resource
	obj runtime.Object
	old runtime.Object // for MODIFIED: the state before, to see selector transitions
	rv  uint64
}

// watcher is one open watch: a filter and an unbounded queue of events, so a
// slow client never blocks a write and never loses an event.
type watcher struct {
	res *resource
	sel selector

	mu      sync.Mutex
	queue   []watch.Event
	wake    chan struct{}
	stopped bool
}

func newWatcher(res *resource, sel selector) *watcher {
	return &watcher{res: res, sel: sel, wake: make(chan struct{}, 1)}
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next blocks until events are queued or ctx ends, and returns them all.
func (w *watcher) next(ctx context.Context) ([]watch.Event, error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			evs := w.queue
			w.queue = nil
			w.mu.Unlock()
			return evs, nil
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.wake:
		}
	}
}

// translate turns a store event into what this watcher should see, if
// anything: an object that starts matching the selector is ADDED for it, one
// that stops matching is DELETED, as the real server's watch cache does.
func (w *watcher) translate(ev *event) (watch.Event, bool) {
	if ev.res != w.res {
		return watch.Event{}, false
	}
	nowMatches := w.sel.matches(w.res, ev.obj)
	switch ev.typ {
	case watch.Added, watch.Deleted:
		return watch.Event{Type: ev.typ, Object: ev.obj}, nowMatches
	default:
		wasMatching := ev.old != nil && w.sel.matches(w.res, ev.old)
		switch {
		case nowMatches && wasMatching:
			return watch.Event{Type: watch.Modified, Object: ev.obj}, true
		case nowMatches:
			return watch.Event{Type: watch.Added, Object: ev.obj}, true
		case wasMatching:
			return watch.Event{Type: watch.Deleted, Object: ev.obj}, true
		}
	}
	return watch.Event{}, false
}

// publishLocked appends ev to the history and queues it for every watcher.
func (s *store) publishLocked(ev *event) {
	s.history = append(s.history, ev)
	if over := len(s.history) - s.historyLimit; over > 0 {
		// Drop the oldest; copy so the backing array does not grow forever.
		s.history = append([]*event(nil), s.history[over:]...)
	}
	for w := range s.watchers {
		if out, ok := w.translate(ev); ok {
			w.push(out)
		}
	}
}

// watchOptions are the parts of a watch request the store acts on.
type watchOptions struct {
	resourceVersion   string
	sendInitialEvents bool
	allowBookmarks    bool
}

// openWatch registers a watcher and queues what it must see first: the
// current state (for a watch without a resourceVersion, or with
// sendInitialEvents) or the history after the given resourceVersion.
func (s *store) openWatch(res *resource, sel selector, opts watchOptions) (*watcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := newWatcher(res, sel)
	switch {
	case opts.sendInitialEvents || opts.resourceVersion == "" || opts.resourceVersion == "0":
		for _, obj := range s.listLocked(res, sel) {
			w.queue = append(w.queue, watch.Event{Type: watch.Added, Object: obj})
		}
		if opts.sendInitialEvents && opts.allowBookmarks {
			w.queue = append(w.queue, s.bookmarkLocked(res, true))
		}
	default:
		from, err := strconv.ParseUint(opts.resourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", opts.resourceVersion))
		}
		if from > s.rv {
			// The real server waits for a future resourceVersion; ours can
			// only come from a client that talked to another server.
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, s.rv), 1)
		}
		if len(s.history) > 0 && from+1 < s.history[0].rv {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.history[0].rv-1))
		}
		for _, ev := range s.history {
			if ev.rv <= from {
				continue
			}
			if out, ok := w.translate(ev); ok {
				w.queue = append(w.queue, out)
			}
		}
	}
	s.watchers[w] = struct{}{}
	return w, nil
}

// bookmarkLocked is a BOOKMARK event at the current resourceVersion; with
// initialEventsEnd it carries the annotation that tells a client using
// sendInitialEvents that the initial state is complete.
func (s *store) bookmarkLocked(res *resource, initialEventsEnd bool) watch.Event {
	obj, _ := scheme.New(res.gvk())
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	if initialEventsEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}

func (s *store) closeWatch(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watchers, w)
	w.stopped = true
}
