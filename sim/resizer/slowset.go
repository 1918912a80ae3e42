package resizer

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// slowSet holds the claims whose last operation was infeasible, each with
// the time of its first infeasible try: both controllers of the sidecar
// try such a claim again only once retention has passed since
// (csi-lib-utils slowset, which the sidecar makes with
// --retry-interval-max). An entry older than retention has expired, as the
// sidecar's sweep every 100 ms removes it.
type slowSet struct {
	clock     clock.PassiveClock
	retention time.Duration

	mu    sync.Mutex
	since map[string]time.Time
}

func newSlowSet(clk clock.PassiveClock, retention time.Duration) *slowSet {
	return &slowSet{clock: clk, retention: retention, since: map[string]time.Time{}}
}

// add puts key in the set unless it is there and has not expired: the
// time of the first infeasible try counts.
func (s *slowSet) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if since, ok := s.since[key]; ok && s.clock.Since(since) <= s.retention {
		return
	}
	s.since[key] = s.clock.Now()
}

// contains: key is in the set and has not expired.
func (s *slowSet) contains(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	since, ok := s.since[key]
	return ok && s.clock.Since(since) < s.retention
}

// remaining is how long key has still to wait, 0 if it is not in the set.
func (s *slowSet) remaining(key string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if since, ok := s.since[key]; ok {
		return s.retention - s.clock.Since(since)
	}
	return 0
}

func (s *slowSet) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, key)
}
