package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/csisim/csisim/invariant"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/trace"
)

// timelineFlags are `csisim run`'s --format and --html: the timeline in the
// formats of package trace.
type timelineFlags struct {
	format  string // text, json or mermaid: what stdout gets
	html    string // if set, the file the HTML page is written to
	startup bool   // print the cluster's start-up entry by entry
	printer *startupPrinter
}

const formatUsage = "how the timeline is printed on stdout: text (as it happens), json (JSON Lines: the entries, then the\n" +
	"invariant violations; the schema is in trace/README.md) or mermaid (a sequence diagram), both when the run ends;\n" +
	"with json and mermaid, stdout holds only the timeline and the other lines go to stderr"

func addTimelineFlags(fs *flag.FlagSet) *timelineFlags {
	f := &timelineFlags{}
	fs.StringVar(&f.format, "format", "text", formatUsage)
	fs.StringVar(&f.html, "html", "", "also write the timeline to this file as one self-contained HTML page: a swim-lane per component,\n"+
		"a click on an entry shows its object or request, a filter shows one claim, pod or volume")
	fs.BoolVar(&f.startup, "startup", false, "print the cluster's start-up in the text timeline entry by entry (the API server's own objects,\n"+
		"the components' questions to the driver, the nodes registering) instead of one line that counts them")
	return f
}

// check refuses what the flags cannot do: the formats are for one run,
// printed whole.
func (f *timelineFlags) check(sweep, nemesis bool) error {
	switch {
	case f.format != "text" && f.format != "json" && f.format != "mermaid":
		return fmt.Errorf("--format %q: the formats are text, json and mermaid", f.format)
	case f.format == "text" && f.html == "":
		return nil
	case sweep:
		return errors.New("--format and --html are for a single run, not --seeds (replay one seed with them)")
	case nemesis:
		return errors.New("--format and --html are for a single run, not --nemesis (replay its seed without it)")
	}
	return nil
}

// info is where the lines about the run go (the scenario's name, how it
// ended): stdout with the text timeline, else stderr, so that stdout holds
// nothing but the timeline in its format.
func (f *timelineFlags) info(stdout, stderr io.Writer) io.Writer {
	if f.format == "text" {
		return stdout
	}
	return stderr
}

// onEntry is the per-entry printer for the cluster's OnEntry: the text
// timeline is printed as it happens; nil for a format printed whole when
// the run has ended (when the run's directory, which the formats leave
// out, is known).
func (f *timelineFlags) onEntry(stdout io.Writer) func(trace.Entry) {
	if f.format == "text" {
		f.printer = newStartupPrinter(stdout, f.startup)
		return f.printer.entry
	}
	return nil
}

// flush prints what the text timeline still holds back of the start-up:
// the run ended before its first step.
func (f *timelineFlags) flush() {
	if f.printer != nil {
		f.printer.flush()
	}
}

// finish prints the JSON timeline or the Mermaid diagram and writes the
// HTML page, when the run has ended.
func (f *timelineFlags) finish(out runOutcome, title string, stdout io.Writer) error {
	tl := trace.Timeline{Entries: out.entries, Violations: violationsOf(out), Root: out.root}
	var errs []error
	switch f.format {
	case "json":
		errs = append(errs, trace.WriteJSON(stdout, tl))
	case "mermaid":
		errs = append(errs, trace.WriteMermaid(stdout, tl))
	}
	if f.html != "" {
		errs = append(errs, writeHTMLFile(f.html, tl, trace.HTMLOptions{Title: title, Verdict: verdictOf(out)}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing the timeline: %w", err)
	}
	return nil
}

// verdictOf is how the run ended, as the page's head says it: without
// wall-clock times, so that a seed gives the same page.
func verdictOf(out runOutcome) *trace.Verdict {
	if f := out.runFailure(); f != nil {
		return &trace.Verdict{Summary: f.Summary}
	}
	if out.closeErr != nil {
		return &trace.Verdict{Summary: "every step passed, but tearing the cluster down failed: " + firstLine(out.closeErr.Error())}
	}
	if out.result == nil {
		return nil
	}
	return &trace.Verdict{Passed: true, Summary: fmt.Sprintf("%d steps passed, %s of cluster time%s", len(out.result.Steps),
		out.result.Duration.Round(time.Millisecond), invariantSummary(out.result.Invariants))}
}

func writeHTMLFile(path string, tl trace.Timeline, opts trace.HTMLOptions) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	err = trace.WriteHTML(f, tl, opts)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("--html: %w", cerr)
	}
	return err
}

// violationsOf are the invariant violations the run found: all of them
// when the steps passed, those broken by then when a step failed.
func violationsOf(out runOutcome) []trace.Violation {
	var found []invariant.Violation
	var stepErr *scenarios.StepError
	switch {
	case out.result != nil && out.result.Invariants != nil:
		found = out.result.Invariants.Violations
	case errors.As(out.runErr, &stepErr):
		found = append(slices.Clone(stepErr.Broken), stepErr.KnownUpstream...)
	}
	vs := make([]trace.Violation, 0, len(found))
	for _, v := range found {
		vs = append(vs, trace.Violation{Invariant: v.Invariant, Message: v.Message, Entries: v.Entries, KnownUpstream: v.KnownUpstream})
	}
	return vs
}
