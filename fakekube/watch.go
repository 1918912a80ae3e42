package fakekube

import (
	"context"
	"fmt"
	"io"
	"sort"
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
	// ended is closed when the server stops (Server.SetDown): the watch's
	// connection is gone.
	ended     chan struct{}
	endedOnce sync.Once
}

func newWatcher(res *resource, sel selector) *watcher {
	return &watcher{res: res, sel: sel, wake: make(chan struct{}, 1), ended: make(chan struct{})}
}

// end ends the watch as its connection dropping does.
func (w *watcher) end() { w.endedOnce.Do(func() { close(w.ended) }) }

// endWatches ends every open watch (Server.SetDown).
func (s *store) endWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.end()
	}
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
		case <-w.ended:
			return nil, io.EOF
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

// history is the last changes, for watches that resume from a
// resourceVersion: a ring that, once full, overwrites its oldest entry, so a
// write costs the same however long the server has run.
type history struct {
	limit  int
	events []*event // grows to limit, then wraps
	oldest int      // index of the oldest event once the ring has wrapped
}

func (h *history) push(ev *event) {
	if len(h.events) < h.limit {
		h.events = append(h.events, ev)
		return
	}
	h.events[h.oldest] = ev
	h.oldest = (h.oldest + 1) % h.limit
}

func (h *history) len() int { return len(h.events) }

// at is the i-th event, oldest first.
func (h *history) at(i int) *event { return h.events[(h.oldest+i)%len(h.events)] }

// since returns the events after resourceVersion from, oldest first.
func (h *history) since(from uint64) []*event {
	first := sort.Search(h.len(), func(i int) bool { return h.at(i).rv > from })
	out := make([]*event, 0, h.len()-first)
	for i := first; i < h.len(); i++ {
		out = append(out, h.at(i))
	}
	return out
}

// tooOld says whether the history no longer holds every change after
// resourceVersion from, with the error the real server's watch cache gives
// then: 410 Gone, reason Expired, naming the oldest resourceVersion a watch
// can still start from.
func (h *history) tooOld(from uint64) *apierrors.StatusError {
	if h.len() == 0 {
		return nil
	}
	if oldest := h.at(0).rv; from < oldest-1 {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, oldest-1))
	}
	return nil
}

// publishLocked adds ev to the history and queues it for every watcher.
func (s *store) publishLocked(ev *event) {
	s.history.push(ev)
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
	s.expireLocked()
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
			return failedWatch(apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, s.rv), 1)), nil
		}
		if err := s.history.tooOld(from); err != nil {
			return failedWatch(err), nil
		}
		for _, ev := range s.history.since(from) {
			if out, ok := w.translate(ev); ok {
				w.queue = append(w.queue, out)
			}
		}
	}
	s.watchers[w] = struct{}{}
	return w, nil
}

// failedWatch is a watch that sends one ERROR event and ends. That is how
// the real server answers a valid watch request it cannot serve (too old a
// resourceVersion, or one it never reached): 200 OK, and the error as a
// Status in the stream, which a client-go reflector takes as its cue to
// list again.
func failedWatch(err *apierrors.StatusError) *watcher {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w := newWatcher(nil, selector{})
	w.queue = []watch.Event{{Type: watch.Error, Object: &st}}
	return w
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
