package kubelet

// The operation executor's bookkeeping: one operation per volume at a time
// (kubernetes pkg/volume/util/nestedpendingoperations) and an exponential
// backoff per volume after a failure (pkg/util/goroutinemap/
// exponentialbackoff). The operations themselves are the operation
// generator's and the CSI plugin's (mount.go, block.go, inline.go,
// expand.go).

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// opBackoff is the operation executor's exponential backoff per volume:
// after a failure the volume's next operation waits volumeRetryInitial,
// doubling with each further failure up to volumeRetryMax.
type opBackoff struct {
	mu    sync.Mutex
	state map[corev1.UniqueVolumeName]backoffState
}

type backoffState struct {
	notBefore time.Time
	last      time.Duration
}

// remaining is how long the volume must still wait; 0 when it may go.
func (b *opBackoff) remaining(u corev1.UniqueVolumeName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.state[u]
	if !ok || !now.Before(st.notBefore) {
		return 0
	}
	return st.notBefore.Sub(now)
}

// failed records a failure at now and returns the wait before the next try.
func (b *opBackoff) failed(u corev1.UniqueVolumeName, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == nil {
		b.state = map[corev1.UniqueVolumeName]backoffState{}
	}
	d := volumeRetryInitial
	if st, ok := b.state[u]; ok {
		d = min(2*st.last, volumeRetryMax)
	}
	b.state[u] = backoffState{notBefore: now.Add(d), last: d}
	return d
}

// reset forgets the volume's failures after a success.
func (b *opBackoff) reset(u corev1.UniqueVolumeName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.state, u)
}

// clear forgets every failure, as a new kubelet process starts afresh.
func (b *opBackoff) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = nil
}

// pendingOps are the volumes with an operation under way that no other may
// overlap: a NodeUnstageVolume held by a fault, say, while another sync
// finds the volume unused too.
type pendingOps struct {
	running sync.Map // corev1.UniqueVolumeName → struct{}
}

// start marks an operation of the volume under way; false if one is.
func (p *pendingOps) start(u corev1.UniqueVolumeName) bool {
	_, running := p.running.LoadOrStore(u, struct{}{})
	return !running
}

// underWay reports whether an operation of the volume is under way.
func (p *pendingOps) underWay(u corev1.UniqueVolumeName) bool {
	_, ok := p.running.Load(u)
	return ok
}

// done marks the volume's operation finished.
func (p *pendingOps) done(u corev1.UniqueVolumeName) { p.running.Delete(u) }

// clear forgets every operation, as a new kubelet process starts afresh.
func (p *pendingOps) clear() { p.running.Clear() }
