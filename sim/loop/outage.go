package loop

import (
	"sort"
	"time"
)

// APIDown ends the watches of every informer, as a stopped API server
// does (fakekube.Server.SetDown): from now on they hear of no write. Each
// informer's reflector then does what client-go's does (tools/cache/
// reflector.go watch and RunWithContext): it tries to watch again from
// the last resourceVersion it saw, and while the server refuses the
// connection it backs off (800 ms doubling to 30 s, jittered) and tries
// again; once the server is back, the watch is answered 410 Gone — a
// restarted kube-apiserver's watch cache begins after the outage and
// holds no older event — and after one more backoff the reflector lists
// and replaces its cache, its handlers told what changed, as after a
// watch-drop (DropWatchEvents). onRelist, if set, hears of each list.
//
// Not modelled: the real reflector's backoff manager is shared by its
// list and watch attempts and reset after a watch that lasted long
// enough; here one reflectorBackoff per informer takes every step.
func (l *Loop) APIDown(onRelist func(Relist)) {
	// Writes made so far reach the informers before the watches end.
	l.deliver()
	now := l.clock.Now()
	for _, inf := range l.informers {
		if inf.drop == nil {
			inf.drop = &watchDrop{onRelist: onRelist}
		}
		if inf.drop.ended {
			continue // its list is already on the clock; it fails while the server is down
		}
		inf.drop.ended, inf.drop.brokeAt = true, now
		inf.rewatch()
	}
}

// rewatch is one of the reflector's attempts to watch again after its
// backoff: refused while the server is down, answered 410 Gone once it is
// back, and then a list after one more backoff.
func (i *Informer) rewatch() {
	l := i.loop
	l.afterInline(i.backoff.step(l.clock.Now(), l.rand.Float64()), func() {
		if l.api.Down() {
			i.rewatch()
			return
		}
		l.afterInline(i.backoff.step(l.clock.Now(), l.rand.Float64()), func() {
			i.relist(l.clock.Now().Sub(i.drop.brokeAt))
		})
	})
}

// After runs fn on the loop's goroutine once d of virtual time has passed;
// fn must be quick and make no calls (flip a switch, record an entry).
func (l *Loop) After(d time.Duration, fn func()) { l.afterInline(d, fn) }

// Jitter draws a number in [0, 1) from the simulation's seeded source, for
// a component's randomized wait (the event recorder's first retry).
func (l *Loop) Jitter() float64 { return l.rand.Float64() }

// Relisting names the informers whose watch has ended (an API server
// outage, or a watch-drop that has lost its events) and whose reflector
// has not listed again yet, as "component resource", sorted. Until each
// has listed, its controller acts on a cache that misses what changed
// while it was blind: an end judged then sees a cluster still catching up.
func (l *Loop) Relisting() []string {
	var out []string
	for _, inf := range l.informers {
		if inf.drop != nil && inf.drop.ended {
			out = append(out, inf.component+" "+inf.gvr.Resource)
		}
	}
	sort.Strings(out)
	return out
}
