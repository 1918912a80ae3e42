package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/csisim/csisim/trace"
)

// startupPrinter prints the text timeline as it happens, with the cluster's
// start-up folded into one line: the entries before the scenario's first
// step (the API server's own objects, the sidecars' and kubelets' questions
// to the driver, the nodes registering) are the same in every run and
// buried step 1 under some 25 lines. A failed entry or an injected fault
// among them is never folded; a run that ends before its first step prints
// them all, since they are then the whole story. --startup prints every
// entry as it comes.
type startupPrinter struct {
	w    io.Writer
	mu   sync.Mutex
	done bool // the first step has begun: print as it comes
	held []trace.Entry
}

func newStartupPrinter(w io.Writer, showStartup bool) *startupPrinter {
	return &startupPrinter{w: w, done: showStartup}
}

// entry prints e, or holds it while the cluster is still starting.
func (p *startupPrinter) entry(e trace.Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.done:
	case e.Kind == trace.Step:
		fmt.Fprintln(p.w, startupSummary(p.held))
		p.done, p.held = true, nil
	case e.Err != "" || e.Kind == trace.Fault:
		// What went wrong is printed where it happened, with what led to it.
		p.flushLocked()
	default:
		p.held = append(p.held, e)
		return
	}
	fmt.Fprintln(p.w, e.String())
}

// flush prints the entries still held: the run ended before its first step.
func (p *startupPrinter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
}

func (p *startupPrinter) flushLocked() {
	for _, e := range p.held {
		fmt.Fprintln(p.w, e.String())
	}
	p.held = nil
}

// startupSummary is the line the held start-up entries are folded into,
// in the timeline's columns, saying what they were and how to see them.
func startupSummary(held []trace.Entry) string {
	var api, csi, nodes int
	var at trace.Entry
	for _, e := range held {
		at = e
		switch e.Kind {
		case trace.API:
			api++
			if e.Verb == "create" && strings.HasPrefix(e.Object, "Node ") {
				nodes++
			}
		case trace.CSI:
			csi++
		}
	}
	at.Kind, at.Actor, at.Verb, at.Detail, at.Err, at.Wall = "", "csisim", "start", "", "", 0
	at.Object = fmt.Sprintf("the cluster started: %s, %s, %s (--startup prints them)",
		plural(nodes, "node"), plural(api, "API write"), plural(csi, "CSI call"))
	return at.Canonical()
}
