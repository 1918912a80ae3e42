// Package loop runs a simulated cluster deterministically on virtual time,
// in the manner of deterministic simulators (FoundationDB's, TigerBeetle's
// VOPR): one loop owns the run. API writes are handed to the components'
// informers in resourceVersion order; the loop then picks the next ready
// work item among all controllers' queues with a seeded random choice, runs
// it to completion — CSI calls to the real driver processes included, while
// the virtual clock stands still — and advances the clock to the next timer
// only when nothing is ready. A work item whose CSI call a fault holds
// (delay, hang) is parked on the virtual clock instead and taken up again
// when its time has come (park.go), while the rest of the cluster goes on. The same seed and inputs give the same
// sequence of API writes and CSI calls, and a six-minute timeout costs no
// wall time. The controllers keep the informer → workqueue → sync shape, so
// the same code runs under goroutines against a real API server.
package loop

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/controller"
)

// Loop is one simulation's scheduler. Its methods that run work (Settle,
// RunFor, RunUntil, RunRealtime) must not be called concurrently.
type Loop struct {
	api   *fakekube.Server
	clock *testingclock.FakeClock
	rand  *rand.Rand

	mu      sync.Mutex
	pending []fakekube.Write
	timers  timerHeap
	seq     uint64
	wakeCh  chan struct{}

	informers []*Informer
	// routes is which informers a write of each resource goes to.
	routes  map[schema.GroupVersionResource]*route
	workers []*worker

	// yield passes control between the loop and the goroutine running a
	// job (see park.go); active counts the goroutines the loop is waiting
	// for, so that Park knows whether a job is running at all.
	yield    chan struct{}
	active   atomic.Int32
	stopped  chan struct{}
	stopOnce sync.Once
}

type worker struct {
	name   string
	queue  *Queue
	sync   controller.Sync
	paused bool
}

// Pause stops (or resumes) running the named worker's keys: they wait in
// its queue, as a stopped process's work does.
func (l *Loop) Pause(name string, paused bool) {
	for _, w := range l.workers {
		if w.name == name {
			w.paused = paused
		}
	}
	l.wake()
}

// New returns a loop for the API server api, on clock, seeded with seed.
// Route the server's OnWrite hook to Observe.
func New(api *fakekube.Server, clk *testingclock.FakeClock, seed uint64) *Loop {
	return &Loop{api: api, clock: clk, rand: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), wakeCh: make(chan struct{}, 1),
		yield: make(chan struct{}), stopped: make(chan struct{})}
}

// Clock is the loop's virtual clock.
func (l *Loop) Clock() *testingclock.FakeClock { return l.clock }

// Observe records an API write for delivery to the informers. It is the
// API server's OnWrite hook: it runs under the store's lock and only
// queues the write.
func (l *Loop) Observe(w fakekube.Write) {
	l.mu.Lock()
	l.pending = append(l.pending, w)
	l.mu.Unlock()
	l.wake()
}

func (l *Loop) wake() {
	select {
	case l.wakeCh <- struct{}{}:
	default:
	}
}

// NewQueue makes a work queue whose delays run on the loop's clock, with
// client-go's per-item backoff (5 ms doubling to 1000 s).
func (l *Loop) NewQueue(name string) controller.Queue {
	return newQueue(l, name, 5*time.Millisecond, 1000*time.Second)
}

// NewQueueWithBackoff is NewQueue with another backoff.
func (l *Loop) NewQueueWithBackoff(name string, base, max time.Duration) controller.Queue {
	return newQueue(l, name, base, max)
}

// NewInformer makes an informer for a resource, filled now from the store;
// fieldSelector may be empty.
func (l *Loop) NewInformer(gvr schema.GroupVersionResource, fieldSelector string) (*Informer, error) {
	sel, err := fields.ParseSelector(fieldSelector)
	if err != nil {
		return nil, fmt.Errorf("informer for %s: %w", gvr.Resource, err)
	}
	inf := &Informer{loop: l, gvr: gvr, fields: sel, indexer: newSortedIndexer()}
	// Writes already queued are in the store the informer is filled from.
	l.deliver()
	if err := inf.fill(); err != nil {
		return nil, err
	}
	l.informers = append(l.informers, inf)
	l.addRoute(inf)
	return inf, nil
}

// AddWorkers registers controllers' queues (made by NewQueue) and their
// sync functions.
func (l *Loop) AddWorkers(ws ...controller.Worker) {
	for _, w := range ws {
		q, ok := w.Queue.(*Queue)
		if !ok {
			panic(fmt.Sprintf("loop: worker %s has a queue the loop did not make", w.Name))
		}
		l.workers = append(l.workers, &worker{name: w.Name, queue: q, sync: w.Sync})
	}
}

// Every runs fn as a job every interval of virtual time, first after one
// interval. Like wait.Until, the next run is due interval after this one
// has finished: a run that parks (a CSI call held on virtual time) puts the
// next one off, and delays nothing else. stop ends it: no run starts after
// it (one already running finishes), as when the component stops.
func (l *Loop) Every(interval time.Duration, fn func(context.Context)) (stop func()) {
	var stopped atomic.Bool
	var tick func()
	tick = func() {
		if stopped.Load() {
			return
		}
		fn(context.Background())
		if !stopped.Load() {
			l.addTimer(interval, tick, true)
		}
	}
	l.addTimer(interval, tick, true)
	return func() { stopped.Store(true) }
}

// afterInline runs fn on the loop's goroutine once the clock has advanced
// by d; fn must be quick and make no calls (queueing a key, resuming a
// parked job).
func (l *Loop) afterInline(d time.Duration, fn func()) { l.addTimer(d, fn, false) }

func (l *Loop) addTimer(d time.Duration, fn func(), job bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	heap.Push(&l.timers, &timer{at: l.clock.Now().Add(d), seq: l.seq, fn: fn, job: job})
}

// deliver hands the queued writes to the informers, in order.
func (l *Loop) deliver() {
	for {
		l.mu.Lock()
		writes := l.pending
		l.pending = nil
		l.mu.Unlock()
		if len(writes) == 0 {
			return
		}
		for _, w := range writes {
			rv := ""
			if m, ok := w.Object.(interface{ GetResourceVersion() string }); ok {
				rv = m.GetResourceVersion()
			}
			for _, inf := range l.routes[w.GVR].informersFor(w.Object) {
				matches, _ := l.api.Matches(w.GVR, w.Object, "", nil, inf.fields)
				inf.observe(w.Object, w.Removed, rv, matches)
			}
		}
	}
}

// step delivers writes and runs one ready work item; it reports whether
// there was one.
func (l *Loop) step(ctx context.Context) bool {
	l.deliver()
	var ready []*worker
	for _, w := range l.workers {
		if !w.paused && w.queue.Len() > 0 {
			ready = append(ready, w)
		}
	}
	if len(ready) == 0 {
		return false
	}
	w := ready[l.rand.IntN(len(ready))]
	key, ok := w.queue.take()
	if !ok {
		return true
	}
	// The key stays "processing" until its sync returns, also while the
	// sync is parked: other keys of the same queue go on meanwhile, as
	// with a controller's several worker goroutines.
	l.runJob(func() { controller.Finish(w.queue, key, w.sync(ctx, key)) })
	l.deliver()
	return true
}

// fireDue runs the timers that are due, in order.
func (l *Loop) fireDue() bool {
	fired := false
	for {
		l.mu.Lock()
		if len(l.timers) == 0 || l.timers[0].at.After(l.clock.Now()) {
			l.mu.Unlock()
			return fired
		}
		t := heap.Pop(&l.timers).(*timer)
		l.mu.Unlock()
		if t.job {
			l.runJob(t.fn)
		} else {
			t.fn()
		}
		fired = true
	}
}

// Settle runs everything that is ready at the current virtual time.
func (l *Loop) Settle(ctx context.Context) error {
	for ctx.Err() == nil {
		if l.step(ctx) || l.fireDue() {
			continue
		}
		return nil
	}
	return ctx.Err()
}

// nextTimer is when the next timer is due.
func (l *Loop) nextTimer() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.timers) == 0 {
		return time.Time{}, false
	}
	return l.timers[0].at, true
}

// RunUntil runs the simulation until cond holds (checked whenever the
// cluster is quiet) or timeout of virtual time has passed; then the clock
// stands at that moment. It returns context.DeadlineExceeded on timeout.
func (l *Loop) RunUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := l.clock.Now().Add(timeout)
	for {
		if err := l.Settle(ctx); err != nil {
			return err
		}
		if done, err := cond(); err != nil || done {
			return err
		}
		next, ok := l.nextTimer()
		if !ok || next.After(deadline) {
			l.clock.SetTime(deadline)
			if err := l.Settle(ctx); err != nil {
				return err
			}
			if done, err := cond(); err != nil || done {
				return err
			}
			return context.DeadlineExceeded
		}
		if next.After(l.clock.Now()) {
			l.clock.SetTime(next)
		}
	}
}

// RunFor runs the simulation for d of virtual time.
func (l *Loop) RunFor(ctx context.Context, d time.Duration) error {
	err := l.RunUntil(ctx, d, func() (bool, error) { return false, nil })
	if err == context.DeadlineExceeded {
		return nil
	}
	return err
}

// RunRealtime runs the simulation with the virtual clock following the
// wall clock, until ctx ends: for a cluster people use interactively
// (csisim serve), where writes arrive from outside at any time.
func (l *Loop) RunRealtime(ctx context.Context) { l.RunRealtimeAt(ctx, 1) }

type timer struct {
	at  time.Time
	seq uint64
	fn  func()
	job bool // run fn as a job (it may make calls and park)
}

// timerHeap orders timers by time, then by when they were set.
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(*timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

func sortStrings(s []string) { sort.Strings(s) }
