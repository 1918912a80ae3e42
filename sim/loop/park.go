package loop

import (
	"sync"
	"time"
)

// Jobs and parking.
//
// Every piece of simulation code the loop runs — a controller's sync of one
// key, a periodic timer — is a job. A job runs on a goroutine of its own
// while the loop waits, so that the loop still runs one thing at a time,
// but a job may also stop half-way without finishing: its CSI call is held
// by the fault proxy (csi-delay, csi-hang), which parks the call on the
// virtual clock with Park. The loop then goes on with other work and moves
// the clock; when the parked time has passed, the loop hands control back
// to the job and waits again until it finishes or parks once more. So a
// two-minute hang costs two minutes of virtual time and no wall time, and
// heartbeats and other controllers go on meanwhile, as on a real cluster.
//
// Control passes like a baton: exactly one goroutine runs simulation code
// at a time, and it gives the baton back to the loop by sending on
// l.yield, when its job ends or when it parks.

// runJob runs fn as a job and returns once it has finished or parked.
func (l *Loop) runJob(fn func()) {
	l.active.Add(1)
	defer l.active.Add(-1)
	go func() {
		fn()
		l.giveBack()
	}()
	l.takeBack()
}

// giveBack hands control back to the loop; after Stop nobody takes it.
func (l *Loop) giveBack() {
	select {
	case l.yield <- struct{}{}:
	case <-l.stopped:
	}
}

// takeBack waits until the goroutine running simulation code gives control
// back.
func (l *Loop) takeBack() {
	select {
	case <-l.yield:
	case <-l.stopped:
	}
}

// Park lets d of virtual time pass for the job that is running (d <= 0:
// until interrupted): wait blocks its caller, gives control back to the
// loop and returns true once d has passed, false when interrupt was called
// first or the loop stopped. It is meant for code serving a job from
// another goroutine — the fault proxy's handler of a CSI call the job made.
// interrupt ends the wait at the loop's next step; calling it after wait
// has returned does nothing.
//
// Outside any job (while the cluster starts, or between the steps of a
// scenario, when the loop is not running) nothing could move the clock, so
// the time passes at once: wait returns true without waiting.
func (l *Loop) Park(d time.Duration) (wait func() bool, interrupt func()) {
	if l.active.Load() == 0 {
		return func() bool { return true }, func() {}
	}
	p := &parked{loop: l, woke: make(chan bool, 1)}
	if d > 0 {
		l.afterInline(d, func() { p.resume(true) })
	}
	wait = func() bool {
		l.giveBack()
		select {
		case passed := <-p.woke:
			return passed
		case <-l.stopped:
			return false
		}
	}
	interrupt = func() {
		l.afterInline(0, func() { p.resume(false) })
		l.wake()
	}
	return wait, interrupt
}

// parked is one parked wait.
type parked struct {
	loop *Loop
	once sync.Once
	woke chan bool
}

// resume runs on the loop's goroutine: it wakes the parked code and waits
// until the job it serves finishes or parks again. Only the first resume
// counts: the timer and an interrupt may both come.
func (p *parked) resume(passed bool) {
	p.once.Do(func() {
		p.loop.active.Add(1)
		defer p.loop.active.Add(-1)
		p.woke <- passed
		p.loop.takeBack()
	})
}

// Stop ends the loop for good: parked jobs are released (their waits
// return false) and nothing waits for a job any more. A cluster stops its
// loop before it closes the connections its jobs may be blocked on.
func (l *Loop) Stop() {
	l.stopOnce.Do(func() { close(l.stopped) })
}
