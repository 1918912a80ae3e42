package loop

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Queue is a work queue with the semantics of client-go's rate-limiting
// queue — a key is queued once however often it is added, is never handed
// out twice at a time, and is queued again after Done if it was added while
// being processed — but whose delays are timers of the Loop, on its virtual
// clock, and whose items the Loop hands out itself, in FIFO order. All of
// that happens on the loop's goroutine, so the order is the same every run.
// Backoff is client-go's per-item exponential one (5 ms doubling to 1000 s);
// the overall token bucket of the default limiter is left out, as it meters
// wall time.
type Queue struct {
	name    string
	loop    *Loop
	limiter workqueue.TypedRateLimiter[string]

	mu         sync.Mutex
	cond       *sync.Cond
	ready      []string
	dirty      map[string]bool
	processing map[string]bool
	waiting    map[string]time.Time // key → when a delayed add is due
	shutdown   bool
}

var _ workqueue.TypedRateLimitingInterface[string] = (*Queue)(nil)

func newQueue(l *Loop, name string, base, max time.Duration) *Queue {
	q := &Queue{name: name, loop: l, limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
		dirty: map[string]bool{}, processing: map[string]bool{}, waiting: map[string]time.Time{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues key unless it is queued already.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	if !q.processing[key] {
		q.ready = append(q.ready, key)
		q.cond.Signal()
	}
	q.loop.wake()
}

// Len is the number of keys ready to be handed out.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready)
}

// Get blocks until a key is ready. The Loop does not use it (it calls take);
// it is here for code that runs a queue with goroutines.
func (q *Queue) Get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if len(q.ready) == 0 {
		return "", true
	}
	return q.popLocked(), false
}

// take hands out the next key, if any.
func (q *Queue) take() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ready) == 0 || q.shutdown {
		return "", false
	}
	return q.popLocked(), true
}

func (q *Queue) popLocked() string {
	key := q.ready[0]
	q.ready = q.ready[1:]
	q.processing[key] = true
	delete(q.dirty, key)
	return key
}

// Done marks key processed; if it was added meanwhile it is queued again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] {
		q.ready = append(q.ready, key)
		q.cond.Signal()
	}
}

// ShutDown stops handing out keys.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.cond.Broadcast()
}

// ShutDownWithDrain is ShutDown: the loop processes nothing after it.
func (q *Queue) ShutDownWithDrain() { q.ShutDown() }

// ShuttingDown reports whether ShutDown was called.
func (q *Queue) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// AddAfter queues key once the loop's clock has advanced by d. As in
// client-go's delaying queue, a key waits once: a second AddAfter keeps
// whichever time is sooner.
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	at := q.loop.clock.Now().Add(d)
	q.mu.Lock()
	if prev, ok := q.waiting[key]; q.shutdown || (ok && !at.Before(prev)) {
		q.mu.Unlock()
		return
	}
	q.waiting[key] = at
	q.mu.Unlock()
	q.loop.afterInline(d, func() {
		q.mu.Lock()
		due := q.waiting[key].Equal(at)
		if due {
			delete(q.waiting, key)
		}
		q.mu.Unlock()
		if due {
			q.Add(key)
		}
	})
}

// AddRateLimited queues key after its backoff.
func (q *Queue) AddRateLimited(key string) { q.AddAfter(key, q.limiter.When(key)) }

// Forget resets key's backoff.
func (q *Queue) Forget(key string) { q.limiter.Forget(key) }

// NumRequeues is how often key has been backed off.
func (q *Queue) NumRequeues(key string) int { return q.limiter.NumRequeues(key) }
