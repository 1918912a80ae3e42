package resizer

import "sync"

// keySet is a set of keys (claims, by key or UID) that workers mark and
// read concurrently: what a controller remembers of each claim's last
// operation between syncs. The zero value is empty and ready.
type keySet struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (s *keySet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key]
}

// set adds key (on) or removes it.
func (s *keySet) set(key string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(s.keys, key)
		return
	}
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	s.keys[key] = true
}
