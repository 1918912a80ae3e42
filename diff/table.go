package diff

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Bookkeeping says whether d is a difference in who wrote an object: the
// managers of its managedFields (manager, operation, subresource), which
// both API servers keep with the same field manager. The table counts
// them apart so that what is left is what the scenario's story is about.
func Bookkeeping(d Difference) bool { return d.Field == "managers" }

// Missing is a scenario whose diff wrote no report (its clusters could not
// start, or it was killed), for the table to show in a row of its own.
type Missing struct {
	Scenario string
	// Why says what became of it, e.g. where its log is.
	Why string
}

// WriteTable writes the reports of several scenarios as one markdown table,
// a row per scenario (and one per scenario in missing): how each run went,
// the differences in behaviour (the bookkeeping ones counted apart), those
// only in timing, those of behaviour and bookkeeping that the scenario's
// fidelity: section does not explain, its stale entries, and the wall time
// each side took. Below it, each scenario's explained differences by the
// entry that explains them, quoting its why, and every unexplained one.
func WriteTable(w io.Writer, reports []*Report, missing ...Missing) error {
	var b strings.Builder
	b.WriteString("| scenario | simulator | real | behaviour | bookkeeping | timing | unexplained | stale | wall (sim / real) |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---|\n")
	var agree, unexplained int
	for _, r := range reports {
		var behaviour, bookkeeping int
		for _, d := range r.Behaviour() {
			if Bookkeeping(d) {
				bookkeeping++
			} else {
				behaviour++
			}
		}
		if r.Complete() && behaviour == 0 {
			agree++
		}
		u := len(r.Unexplained())
		unexplained += u
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %d | %s / %s |\n", r.title(), r.Sim.outcome(), r.Real.outcome(),
			behaviour, bookkeeping, len(r.Timing()), u, len(r.Stale), r.Sim.Duration.Round(time.Millisecond), r.Real.Duration.Round(time.Second))
	}
	for _, m := range missing {
		fmt.Fprintf(&b, "| `%s` | no report | no report | | | | | | %s |\n", m.Scenario, m.Why)
	}
	fmt.Fprintf(&b, "\n%d of %d scenarios agree in behaviour but for the bookkeeping; %d differences unexplained",
		agree, len(reports)+len(missing), unexplained)
	if len(missing) > 0 {
		fmt.Fprintf(&b, "; %d scenarios without a report", len(missing))
	}
	b.WriteString(".\n")
	writeExplanations(&b, reports)
	_, err := io.WriteString(w, b.String())
	return err
}

// title is a report's scenario in a table cell, with how it was diffed
// where that is not the default.
func (r *Report) title() string {
	s := "`" + r.Scenario + "`"
	if len(r.RealNodes) > 0 {
		s += " (real nodes)"
	}
	if r.Speedup > 1 {
		s += fmt.Sprintf(" (speedup %d)", r.Speedup)
	}
	return s
}

// writeExplanations lists, for each report with differences of behaviour,
// how many each fidelity: entry explains, with its why, and each
// unexplained difference.
func writeExplanations(b *strings.Builder, reports []*Report) {
	header := false
	for _, r := range reports {
		if len(r.Behaviour()) == 0 {
			continue
		}
		if !header {
			b.WriteString("\nThe differences of behaviour, as their scenario files explain them:\n\n")
			header = true
		}
		fmt.Fprintf(b, "- %s:\n", r.title())
		counts := map[int]int{}
		var order []Difference
		for _, d := range r.Behaviour() {
			switch {
			case d.Explanation == nil:
				fmt.Fprintf(b, "  - **unexplained**: `%s`\n", d)
			case counts[d.Explanation.Line] == 0:
				order = append(order, d)
				fallthrough
			default:
				counts[d.Explanation.Line]++
			}
		}
		for _, d := range order {
			e := d.Explanation
			fmt.Fprintf(b, "  - %d explained by line %d (`%s`): %s\n", counts[e.Line], e.Line, e, e.Why)
		}
	}
}

// outcome is a run's result in a table cell: passed, failed at a step, or
// stopped early.
func (run RunResult) outcome() string {
	switch {
	case run.Passed:
		return fmt.Sprintf("passed %d/%d", run.Steps, run.Total)
	case run.Error != "":
		return fmt.Sprintf("stopped at %d/%d", run.Steps, run.Total)
	}
	return fmt.Sprintf("failed step %d/%d", run.Steps, run.Total)
}
