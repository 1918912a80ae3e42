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

// WriteTable writes the reports of several scenarios as one markdown table,
// a row per scenario: how each run went, the differences in behaviour (the
// bookkeeping ones counted apart), the differences only in timing, and the
// wall time each side took.
func WriteTable(w io.Writer, reports []*Report) error {
	var b strings.Builder
	b.WriteString("| scenario | simulator | real control plane | behaviour | bookkeeping | timing | wall (sim / real) |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|\n")
	var agree int
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
		fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %d | %d | %s / %s |\n", r.Scenario, r.Sim.outcome(), r.Real.outcome(),
			behaviour, bookkeeping, len(r.Timing()), r.Sim.Duration.Round(time.Millisecond), r.Real.Duration.Round(time.Second))
	}
	fmt.Fprintf(&b, "\n%d of %d scenarios agree in behaviour but for the bookkeeping.\n", agree, len(reports))
	_, err := io.WriteString(w, b.String())
	return err
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
