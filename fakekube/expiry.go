package fakekube

import (
	"container/heap"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
)

// DefaultEventTTL is how long an Event lives after its last write unless
// Options say otherwise: kube-apiserver's --event-ttl default.
const DefaultEventTTL = time.Hour

// expiry is when an object written at resourceVersion rv is due to go,
// unless it is written again first: a real API server stores Events under
// an etcd lease of --event-ttl, renewed on every write.
type expiry struct {
	at  time.Time
	rv  uint64
	ref objectRef
}

// expiries is a min-heap of expiries, soonest first; of two due at the
// same moment, the one written first goes first, so the order of
// deletions does not depend on the heap's insides.
type expiries []expiry

func (q expiries) Len() int { return len(q) }
func (q expiries) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].rv < q[j].rv
}
func (q expiries) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *expiries) Push(x any)   { *q = append(*q, x.(expiry)) }
func (q *expiries) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
}

// scheduleExpiryLocked notes, for an object of a kind that expires, when
// the write just committed at resourceVersion rv lets it go.
func (s *store) scheduleExpiryLocked(ref objectRef, rv uint64) {
	if !ref.res.expires || s.eventTTL <= 0 {
		return
	}
	heap.Push(&s.expiries, expiry{at: s.clock.Now().Add(s.eventTTL), rv: rv, ref: ref})
}

// expireLocked removes the objects whose time is up on the store's clock.
// It runs before every read and write, so that on a virtual clock an
// expiry happens at the first request after it is due — the same request
// in every run with the same seed. Like an etcd lease running out, it is
// no client's write: watchers see the object DELETED, the write hook hears
// nothing (an audit log would not show it either).
func (s *store) expireLocked() {
	now := s.clock.Now()
	for len(s.expiries) > 0 && !s.expiries[0].at.After(now) {
		due := heap.Pop(&s.expiries).(expiry)
		obj, ok := s.objects[due.ref.res][due.ref.key]
		if !ok {
			continue // deleted already
		}
		if m, _ := meta.Accessor(obj); m.GetResourceVersion() != strconv.FormatUint(due.rv, 10) {
			continue // written since: a later expiry stands for it
		}
		s.dropLocked(due.ref.res, obj)
	}
}
