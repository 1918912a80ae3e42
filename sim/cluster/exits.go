package cluster

import (
	"fmt"
	"sync"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/trace"
)

// exits keeps the unexpected exits of the cluster's driver processes: a
// plugin that dies on its own (a crash, a bad flag, a panic) is named in
// the timeline as it happens and in the failing run's message, not only in
// the driver log. Exits the cluster asks for (Close, faults that kill or
// restart a plugin) are not reported.
type exits struct {
	mu       sync.Mutex
	problems []string
}

// watch records p's PID in the run root, so that a sweep after a SIGKILLed
// run kills what is left of it, and reports p's exit if nobody asked for
// it. plugin names the plugin: "controller plugin", "node plugin on
// node-1".
func (d *driver) watch(p *launch.Process, plugin string) error {
	p.OnExit(func(e launch.Exit) {
		if e.Intended {
			return
		}
		problem := fmt.Sprintf("%s %s (pid %d)", plugin, e.Status(), e.PID)
		d.exits.add(problem)
		d.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "csisim", Verb: "driver-exited", Object: plugin, Err: e.Status()})
	})
	return d.root.RecordProcess(p.PID())
}

// Problems are what went wrong in the cluster outside the scenario's
// control so far, oldest first: driver plugins that exited unexpectedly
// ("node plugin on node-1 exited with status 3 (pid 4242)").
func (c *Cluster) Problems() []string {
	var out []string
	for _, d := range c.drivers {
		out = append(out, d.exits.list()...)
	}
	return out
}

func (e *exits) add(problem string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problems = append(e.problems, problem)
}

func (e *exits) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.problems...)
}
