package loop

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// The reflector's backoff between one ListAndWatch and the next, from
// client-go tools/cache/reflector.go (defaultBackoffInit, defaultBackoffMax,
// defaultBackoffFactor, defaultBackoffJitter, defaultBackoffReset): 800 ms
// doubling to 30 s, each wait stretched by up to 100 % at random, and
// started again from 800 ms when more than two minutes have passed since
// the backoff was last reset.
const (
	reflectorBackoffInit   = 800 * time.Millisecond
	reflectorBackoffMax    = 30 * time.Second
	reflectorBackoffReset  = 2 * time.Minute
	reflectorBackoffJitter = 1.0
)

// Relist is what a reflector's list after a broken watch changed in its
// informer, as its handlers were told.
type Relist struct {
	Component string
	Resource  string
	// Missed is how many events the informer did not get.
	Missed int
	// Delay is the reflector's backoff between the broken watch and the
	// list.
	Delay time.Duration
	// Updated, Added and Deleted are the keys the list told the handlers
	// of: changed objects as updates, new ones as adds, those gone as
	// deletes of a cache.DeletedFinalStateUnknown tombstone.
	Updated, Added, Deleted []string
}

// watchDrop is a broken watch of one informer: its next events are lost,
// then the watch ends and the reflector lists again.
type watchDrop struct {
	left     int  // events still to lose before the watch ends
	ended    bool // the watch has ended: nothing arrives until the list
	missed   int
	onRelist func(Relist)
	// brokeAt is when an outage ended the watch (APIDown).
	brokeAt time.Time
}

// reflectorBackoff is the reflector's delay function
// (wait.Backoff.DelayWithReset in apimachinery pkg/util/wait/backoff.go).
// The real one's two-minute reset window starts when the reflector is
// made; here it starts at the informer's first broken watch, which gives
// the same first delay and differs only for a second break less than two
// minutes after the first one but more than two after the start.
type reflectorBackoff struct {
	next      time.Duration
	lastStart time.Time
}

func (b *reflectorBackoff) step(now time.Time, jitter float64) time.Duration {
	if b.next == 0 || now.Sub(b.lastStart) > reflectorBackoffReset {
		b.next, b.lastStart = reflectorBackoffInit, now
	}
	d := b.next
	b.next = min(2*b.next, reflectorBackoffMax)
	return d + time.Duration(jitter*reflectorBackoffJitter*float64(d))
}

// DropWatchEvents makes the informers of component (as its informers were
// made, see Informer.BelongsTo) for resource miss their next times events,
// as a watch that loses them; then that watch ends as a real one whose
// events are gone does — the server answers the resumed watch with 410
// Gone — and the reflector, after its backoff, lists again and replaces
// its cache (client-go tools/cache/reflector.go ListAndWatch and
// RunWithContext). What the list changed reaches the handlers as
// client-go's RealFIFO delivers a replace (tools/cache/the_real_fifo.go
// Replace with atomic events, controller.go processReplacedAllInfo): the
// cache is replaced first; then objects gone are deleted as
// DeletedFinalStateUnknown tombstones; then objects whose resourceVersion
// changed are updates and new ones adds, in the list's order. Objects that
// did not change are not announced: shared_informer.go OnUpdate treats an
// unchanged resourceVersion as a resync, which goes only to handlers with
// a resync period, and the loop's informers have none.
//
// Until times events have come the informer stays deaf: a real watch
// would also end at its timeout (5 to 10 minutes), which is not modelled.
// A watch already broken is left as it is (at most it loses more events).
// onRelist, if set, is called after each relist.
func (l *Loop) DropWatchEvents(component, resource string, times int, onRelist func(Relist)) error {
	if times < 1 {
		return fmt.Errorf("dropping watch events of %s for %s: times must be at least 1, not %d", resource, component, times)
	}
	var found []*Informer
	for _, inf := range l.informers {
		if inf.component == component && inf.gvr.Resource == resource {
			found = append(found, inf)
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("%s has no informer of %s (its informers: %v)", component, resource, l.InformerResources(component))
	}
	// Writes made so far reach the informers before the watch breaks.
	l.deliver()
	for _, inf := range found {
		if d := inf.drop; d != nil {
			// Already broken (an earlier drop, or an API server outage):
			// there is no watch to break again. Events still to be lost
			// are at least this drop's; the one relist to come serves both.
			if !d.ended && times > d.left {
				d.left = times
			}
			continue
		}
		inf.drop = &watchDrop{left: times, onRelist: onRelist}
	}
	return nil
}

// InformerResources lists the resources component has informers of.
func (l *Loop) InformerResources(component string) []string {
	var out []string
	for _, inf := range l.informers {
		if inf.component == component {
			out = append(out, inf.gvr.Resource)
		}
	}
	sort.Strings(out)
	return out
}

// BelongsTo names the component whose informer this is (its user agent),
// for DropWatchEvents.
func (i *Informer) BelongsTo(component string) { i.component = component }

// lose reports whether the informer's broken watch loses this event; the
// last event it loses ends the watch and sets the reflector's list on the
// loop's clock.
func (i *Informer) lose() bool {
	d := i.drop
	if d == nil {
		return false
	}
	d.missed++
	if d.ended {
		return true
	}
	d.left--
	if d.left == 0 {
		d.ended = true
		l := i.loop
		delay := i.backoff.step(l.clock.Now(), l.rand.Float64())
		l.afterInline(delay, func() { i.relist(delay) })
	}
	return true
}

// relist lists the resource again and replaces the cache, telling the
// handlers what changed (see DropWatchEvents).
func (i *Informer) relist(delay time.Duration) {
	// Writes queued so far are in the list; the ended watch loses them.
	i.loop.deliver()
	d := i.drop
	items, rv, err := i.loop.api.List(i.gvr, "", labels.Everything(), i.fields)
	if err == nil && i.loop.api.Down() {
		err = errAPIDown
	}
	if err != nil {
		// The reflector would try again after its backoff.
		i.loop.afterInline(i.backoff.step(i.loop.clock.Now(), i.loop.rand.Float64()), func() { i.relist(delay) })
		return
	}
	i.drop = nil
	r := Relist{Component: i.component, Resource: i.gvr.Resource, Missed: d.missed, Delay: delay}
	listed := map[string]bool{}
	type change struct {
		old, obj any
	}
	var changes []change
	for _, obj := range items {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			continue
		}
		listed[key] = true
		old, had, _ := i.indexer.GetByKey(key)
		switch {
		case !had:
			r.Added = append(r.Added, key)
			changes = append(changes, change{nil, obj})
		case resourceVersion(old) != resourceVersion(obj):
			r.Updated = append(r.Updated, key)
			changes = append(changes, change{old, obj})
		}
	}
	var gone []cache.DeletedFinalStateUnknown
	for _, obj := range sortedObjects(i.indexer) {
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		if !listed[key] {
			r.Deleted = append(r.Deleted, key)
			gone = append(gone, cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
		}
	}
	replacement := make([]any, 0, len(items))
	for _, obj := range items {
		replacement = append(replacement, obj)
	}
	_ = i.indexer.Replace(replacement, rv)
	i.mu.Lock()
	i.rv = rv
	handlers := append([]*registration(nil), i.handlers...)
	i.mu.Unlock()
	for _, tomb := range gone {
		for _, h := range handlers {
			h.handler.OnDelete(tomb)
		}
	}
	for _, c := range changes {
		for _, h := range handlers {
			if c.old == nil {
				h.handler.OnAdd(c.obj, false)
			} else {
				h.handler.OnUpdate(c.old, c.obj)
			}
		}
	}
	if d.onRelist != nil {
		d.onRelist(r)
	}
}

// errAPIDown is the list of a reflector while the API server is down.
var errAPIDown = errors.New("connection refused: the API server is down")

// resourceVersion is an object's resourceVersion.
func resourceVersion(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
