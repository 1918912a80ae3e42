// Package apifault keeps the faults of an API server's request path — the
// server stopped, slow to write, throttling — as one state that both
// places which inject them share: fakekube, the simulator's API server,
// and realkube/apiproxy, the proxy in front of a real kube-apiserver. One
// state, one set of rules, so that one scenario means one thing on every
// backend. The package decides only what a request meets; answering it
// (a refused connection, a 429, a held write) is the server's or the
// proxy's own I/O.
//
// Actors are the names of the clients the faults strike (a component's
// user agent); the actor "" stands for every client.
package apifault

import (
	"sync"
	"time"
)

// TooManyRequestsMessage is what kube-apiserver answers a request it
// throttles with, as plain text, beside a Retry-After header
// (k8s.io/apiserver pkg/server/filters/maxinflight.go tooManyRequests,
// which priority and fairness uses too).
const TooManyRequestsMessage = "Too many requests, please try again later."

// State is what the request path does wrong now. The zero value does
// nothing wrong; it is safe for concurrent use.
type State struct {
	mu       sync.Mutex
	down     bool
	slow     map[string]time.Duration // by actor; "" for every actor
	throttle map[string]*throttling   // by actor; "" for every actor
}

// throttling is a throttle in force: left requests still to refuse
// (negative: until ended), each answered with Retry-After seconds.
type throttling struct {
	left       int
	retryAfter int
}

// SetDown stops (true) or starts (false) the server, and reports whether
// it was down before.
func (s *State) SetDown(down bool) (was bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was, s.down = s.down, down
	return was
}

// Down reports whether the server is stopped.
func (s *State) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// SlowWrites makes each write of actor (of every actor when actor is "")
// take latency longer; 0 ends it.
func (s *State) SlowWrites(actor string, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if latency <= 0 {
		delete(s.slow, actor)
		return
	}
	if s.slow == nil {
		s.slow = map[string]time.Duration{}
	}
	s.slow[actor] = latency
}

// WriteLatency is how much longer a write of actor takes: actor's own
// latency if SlowWrites named it, else the one for every actor, else 0.
func (s *State) WriteLatency(actor string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if latency, ok := s.slow[actor]; ok {
		return latency
	}
	return s.slow[""]
}

// Throttle refuses the next n requests of actor (of every actor when
// actor is "") with 429 TooManyRequests and Retry-After: retryAfter, in
// whole seconds and at least 1, as kube-apiserver's priority and fairness
// does when a priority level's queues are full; n < 0 throttles until
// Throttle is called again with n = 0, which ends it.
func (s *State) Throttle(actor string, n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(s.throttle, actor)
		return
	}
	if s.throttle == nil {
		s.throttle = map[string]*throttling{}
	}
	s.throttle[actor] = &throttling{left: n, retryAfter: max(1, int(retryAfter/time.Second))}
}

// PendingThrottled is how many more requests of actor Throttle will
// refuse (negative: until ended); a throttle of every actor is counted
// under "".
func (s *State) PendingThrottled(actor string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.throttle[actor]; t != nil {
		return t.left
	}
	return 0
}

// TakeThrottled decides one request of actor: if a throttle is in force
// for it (its own, else the one for every actor), the request is refused,
// the throttle counts it, and the Retry-After seconds to answer with are
// returned with true. A counted throttle ends with its last refusal.
func (s *State) TakeThrottled(actor string) (retryAfter int, refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := actor
	t := s.throttle[key]
	if t == nil {
		key = ""
		t = s.throttle[key]
	}
	if t == nil {
		return 0, false
	}
	if t.left > 0 {
		t.left--
		if t.left == 0 {
			delete(s.throttle, key)
		}
	}
	return t.retryAfter, true
}
