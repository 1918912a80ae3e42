package loop

import (
	"slices"

	"github.com/csisim/csisim/sim/controller"
)

// RemoveWorkers takes workers out of the loop, as a stopped process's
// queues stop being worked: their queues shut down, so that keys still
// added to them (by handlers, by delayed adds, by a parked job that
// finishes) are dropped.
func (l *Loop) RemoveWorkers(ws ...controller.Worker) {
	for _, w := range ws {
		l.workers = slices.DeleteFunc(l.workers, func(lw *worker) bool { return controller.Queue(lw.queue) == w.Queue })
		w.Queue.ShutDown()
	}
}

// RemoveInformers stops the informers made for component (see
// Informer.BelongsTo): the loop tells them of no more writes, and a
// watch-drop can no longer name them. Their caches stay as they were, for
// a component that still holds them.
func (l *Loop) RemoveInformers(component string) {
	l.informers = slices.DeleteFunc(l.informers, func(inf *Informer) bool { return inf.component == component })
	for _, r := range l.routes {
		r.remove(component)
	}
}
