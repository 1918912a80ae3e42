package apiproxy

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/csisim/csisim/internal/apifault"
)

// The faults of the request path, kept in the same state and words as
// fakekube keeps them (internal/apifault), so that one scenario means one
// thing on every backend: the API server stopped (SetDown), slow to write
// (SlowWrites), or throttling (Throttle). A component is what
// Config.Component names a request's client; "" strikes every client.
// Events are neither throttled nor slowed, as in the simulator, whose
// components write them holding a lock (a limit of csisim that the proxy
// keeps so that a diff compares the components' answers to the same
// fault, not two faults).

// faults is what the request path does wrong now: the request faults,
// kept as fakekube keeps them, and where the watch cache began.
type faults struct {
	apifault.State

	mu sync.Mutex
	// cacheBegins is the resourceVersion the watch cache began at when
	// the proxy came back from its last outage; 0 before any.
	cacheBegins uint64
}

// SlowWrites makes each write (POST, PUT, PATCH, DELETE) of component, or
// of every component when component is "", reach the API server latency
// later; 0 ends it. Reads and watches are left alone.
func (p *Proxy) SlowWrites(component string, latency time.Duration) {
	p.faults.SlowWrites(component, latency)
}

// Throttle answers the next n requests of component (of every component
// when component is "") with 429 TooManyRequests and Retry-After:
// retryAfter (whole seconds, at least 1), as kube-apiserver's priority and
// fairness does when a priority level's queues are full; n < 0 throttles
// until Throttle is called again with 0, which ends it.
func (p *Proxy) Throttle(component string, n int, retryAfter time.Duration) {
	p.faults.Throttle(component, n, retryAfter)
}

// PendingThrottled is how many more requests of component Throttle will
// refuse (negative: until ended).
func (p *Proxy) PendingThrottled(component string) int { return p.faults.PendingThrottled(component) }

// throttled answers the request with 429 if a throttle is in force for
// its component, and reports whether it did.
func (p *Proxy) throttled(w http.ResponseWriter, component string) bool {
	retryAfter, refused := p.faults.TakeThrottled(component)
	if !refused {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	http.Error(w, apifault.TooManyRequestsMessage, http.StatusTooManyRequests)
	return true
}

// writeLatency is how much later a request of component reaches the API
// server: the slow-writes latency for a write, 0 for anything else.
func (p *Proxy) writeLatency(r *http.Request, component string) time.Duration {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return p.faults.WriteLatency(component)
	}
	return 0
}

// wait holds a request for d, or until its client goes (the proxy stopped
// meanwhile closes the connection, which ends the request's context); it
// reports whether the request is still wanted.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
