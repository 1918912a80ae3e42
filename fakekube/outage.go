package fakekube

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/csisim/csisim/internal/apifault"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Faults of the request path: the API server stopped, slow to write, or
// throttling. They strike the clients that talk to the server as a
// cluster's components do; Options.Harness names those that observe the
// cluster from outside (a test harness), which they leave alone, as a
// harness on a real cluster talks to kube-apiserver past the proxy that
// injects the same faults there.

// SetDown stops (true) or starts (false) the server as a process is: while
// it is down, every client's connection is refused (the in-process
// transport's RoundTrip fails as a dial does, with ECONNREFUSED; a client
// over HTTP has its connection closed) and every open watch ends, its
// stream closed without an ERROR event, as the connection drops. What the
// store holds stays, as etcd keeps it.
func (s *Server) SetDown(down bool) {
	s.faults.SetDown(down)
	if down {
		s.store.endWatches()
	}
}

// Down reports whether the server is stopped (SetDown).
func (s *Server) Down() bool { return s.faults.Down() }

// SlowWrites makes the server take latency longer to answer each write
// (create, update, patch, delete) of actor, or of every actor when actor
// is "": the write is applied when the latency has passed, on
// Options.Wait's clock. 0 ends it. Events are left alone (see throttled).
func (s *Server) SlowWrites(actor string, latency time.Duration) { s.faults.SlowWrites(actor, latency) }

// Throttle answers the next n requests of actor (every actor when actor
// is "") with 429 TooManyRequests and Retry-After: retryAfter (whole
// seconds, at least 1), as kube-apiserver does when priority and fairness
// rejects them; n < 0 throttles until Throttle is called again with 0,
// which ends it. Options.OnRefused hears of each refused write.
func (s *Server) Throttle(actor string, n int, retryAfter time.Duration) {
	s.faults.Throttle(actor, n, retryAfter)
}

// PendingThrottled is how many more requests of actor Throttle will
// refuse (negative: until ended).
func (s *Server) PendingThrottled(actor string) int { return s.faults.PendingThrottled(actor) }

// connectionRefused is the error a client's dial gets from a host where
// nothing listens, as client-go sees it when kube-apiserver is stopped
// (k8s.io/apimachinery/pkg/util/net IsConnectionRefused knows it).
func connectionRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// harness reports whether actor observes the cluster from outside
// (Options.Harness), which request faults leave alone.
func (s *Server) harness(actor string) bool {
	for _, h := range s.harnessActors {
		if h == actor {
			return true
		}
	}
	return false
}

// refusesConnection reports whether a request of actor is refused as a
// connection to a stopped server is.
func (s *Server) refusesConnection(actor string) bool {
	return s.Down() && !s.harness(actor)
}

// throttled answers a request with 429 if a throttle is in force for its
// actor, and reports whether it did. Events are never throttled or slowed
// by these faults: the components' recorders write them holding a lock,
// and a write parked on the virtual clock there would stop every other
// event of the component (a limit of csisim, not of the real server).
func (s *Server) throttled(w http.ResponseWriter, r *http.Request, req request) bool {
	if s.harness(req.actor) || req.res.gvr.Resource == "events" {
		return false
	}
	retryAfter, refused := s.faults.TakeThrottled(req.actor)
	if !refused {
		return false
	}
	if wr, ok := writeOf(r, req); ok && s.store.onRefused != nil {
		err := apierrors.NewTooManyRequests(apifault.TooManyRequestsMessage, retryAfter)
		s.store.mu.Lock()
		s.store.onRefused(wr, err)
		s.store.mu.Unlock()
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	http.Error(w, apifault.TooManyRequestsMessage, http.StatusTooManyRequests)
	return true
}

// slowWrite holds a write of a slowed actor for the latency, on
// Options.Wait's clock, before it is served.
func (s *Server) slowWrite(r *http.Request, req request) {
	if s.wait == nil || s.harness(req.actor) || req.res.gvr.Resource == "events" {
		return
	}
	if _, ok := writeOf(r, req); !ok {
		return
	}
	if latency := s.faults.WriteLatency(req.actor); latency > 0 {
		s.wait(latency)
	}
}

// writeOf describes a write request as OnRefused hears of it, and
// reports whether the request is a write. A create's name is in its
// body, which is not read here: the Write has none.
func writeOf(r *http.Request, req request) (Write, bool) {
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch",
		http.MethodDelete: "delete"}[r.Method]
	if verb == "" || req.subresource == "log" {
		return Write{}, false
	}
	return Write{Actor: req.actor, Verb: verb, Resource: req.res.gvr.Resource, GVR: req.res.gvr, Kind: req.res.kind,
		Namespace: req.namespace, Name: req.name, Subresource: req.subresource}, true
}

// inProcessKey marks a request that came through the in-process
// transport, which refuses connections itself while the server is down.
type inProcessKey struct{}

func markInProcess(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), inProcessKey{}, true))
}

func isInProcess(r *http.Request) bool { return r.Context().Value(inProcessKey{}) != nil }

// waitRetryAfter takes a client's wait before it retries a 429 on the
// server's clock (Options.Wait) and hands the client Retry-After: 0.
// client-go honours Retry-After by sleeping that long on the wall clock
// before its next attempt (rest/with_retry.go, at most 10 retries); in a
// simulation the wait must cost virtual time instead, so the in-process
// transport, which stands for the client's side of the connection, waits
// here and the client's own retry then sleeps for nothing.
func (s *Server) waitRetryAfter(resp *http.Response) {
	if s.wait == nil || resp.StatusCode != http.StatusTooManyRequests {
		return
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs <= 0 {
		return
	}
	s.wait(time.Duration(secs) * time.Second)
	resp.Header.Set("Retry-After", "0")
}
