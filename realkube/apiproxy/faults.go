package apiproxy

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The faults of the request path, in the words fakekube uses for the same
// faults (fakekube/outage.go), so that one scenario means one thing on
// every backend: the API server stopped (SetDown), slow to write
// (SlowWrites), or throttling (Throttle). A component is what
// Config.Component names a request's client; "" strikes every client.
// Events are neither throttled nor slowed, as in the simulator, whose
// components write them holding a lock (a limit of csisim that the proxy
// keeps so that a diff compares the components' answers to the same
// fault, not two faults).

// faults is what the request path does wrong now.
type faults struct {
	mu       sync.Mutex
	down     bool
	slow     map[string]time.Duration // by component; "" for every one
	throttle map[string]*throttling   // by component; "" for every one
	// cacheBegins is the resourceVersion the watch cache began at when
	// the proxy came back from its last outage; 0 before any.
	cacheBegins uint64
}

// throttling is a throttle in force: left requests still to refuse
// (negative: until ended), each answered with Retry-After seconds.
type throttling struct {
	left       int
	retryAfter int
}

// tooManyRequestsMessage is what kube-apiserver answers a request it
// throttles with, as plain text, with a Retry-After header
// (k8s.io/apiserver pkg/server/filters/priority-and-fairness.go and
// maxinflight.go, tooManyRequests).
const tooManyRequestsMessage = "Too many requests, please try again later."

// SlowWrites makes each write (POST, PUT, PATCH, DELETE) of component, or
// of every component when component is "", reach the API server latency
// later; 0 ends it. Reads and watches are left alone.
func (p *Proxy) SlowWrites(component string, latency time.Duration) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	if p.faults.slow == nil {
		p.faults.slow = map[string]time.Duration{}
	}
	if latency <= 0 {
		delete(p.faults.slow, component)
		return
	}
	p.faults.slow[component] = latency
}

// Throttle answers the next n requests of component (of every component
// when component is "") with 429 TooManyRequests and Retry-After:
// retryAfter (whole seconds, at least 1), as kube-apiserver's priority and
// fairness does when a priority level's queues are full; n < 0 throttles
// until Throttle is called again with 0, which ends it.
func (p *Proxy) Throttle(component string, n int, retryAfter time.Duration) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	if p.faults.throttle == nil {
		p.faults.throttle = map[string]*throttling{}
	}
	if n == 0 {
		delete(p.faults.throttle, component)
		return
	}
	p.faults.throttle[component] = &throttling{left: n, retryAfter: max(1, int(retryAfter/time.Second))}
}

// PendingThrottled is how many more requests of component Throttle will
// refuse (negative: until ended).
func (p *Proxy) PendingThrottled(component string) int {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	if t := p.faults.throttle[component]; t != nil {
		return t.left
	}
	return 0
}

// throttled answers the request with 429 if a throttle is in force for
// its component, and reports whether it did.
func (p *Proxy) throttled(w http.ResponseWriter, component string) bool {
	p.faults.mu.Lock()
	t := p.faults.throttle[component]
	if t == nil {
		t = p.faults.throttle[""]
	}
	if t == nil {
		p.faults.mu.Unlock()
		return false
	}
	if t.left > 0 {
		t.left--
		if t.left == 0 {
			for c, u := range p.faults.throttle {
				if u == t {
					delete(p.faults.throttle, c)
				}
			}
		}
	}
	retryAfter := t.retryAfter
	p.faults.mu.Unlock()
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	http.Error(w, tooManyRequestsMessage, http.StatusTooManyRequests)
	return true
}

// writeLatency is how much later a request of component reaches the API
// server: the slow-writes latency for a write, 0 for anything else.
func (p *Proxy) writeLatency(r *http.Request, component string) time.Duration {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return 0
	}
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	if latency, ok := p.faults.slow[component]; ok {
		return latency
	}
	return p.faults.slow[""]
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
