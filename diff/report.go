package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Report is the outcome of running one scenario on both backends.
type Report struct {
	Scenario string    `json:"scenario"`
	File     string    `json:"file"`
	Seed     uint64    `json:"seed"`
	Sim      RunResult `json:"sim"`
	Real     RunResult `json:"real"`
	// Differences are in the order they first appear.
	Differences []Difference `json:"differences"`
}

// RunResult is one backend's run of the scenario.
type RunResult struct {
	Backend string `json:"backend"`
	// Passed says every step passed.
	Passed bool `json:"passed"`
	// Steps is how many steps ran (a failed one included), of Total.
	Steps int `json:"steps"`
	Total int `json:"total"`
	// Error is why the run stopped early, or could not start.
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"durationNanos"`
	// Snapshots are the normalised snapshots, one after each step that ran.
	Snapshots []Snapshot `json:"snapshots"`
}

// Identical reports whether both runs ran every step and nothing differed.
func (r *Report) Identical() bool {
	return len(r.Differences) == 0 && r.Sim.Error == "" && r.Real.Error == "" && r.Sim.Steps == r.Real.Steps
}

// WriteText writes the report for a person: the two runs, then each
// difference on a line.
func (r *Report) WriteText(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("scenario %s (%s), seed %d\n", r.Scenario, r.File, r.Seed)
	for _, run := range []RunResult{r.Sim, r.Real} {
		p("  %-10s %s\n", run.Backend+":", run.summary())
	}
	unsettled := 0
	for _, s := range r.Real.Snapshots {
		if !s.Settled {
			unsettled++
		}
	}
	if unsettled > 0 {
		p("  (the real cluster was still changing when %d of its snapshots were taken)\n", unsettled)
	}
	switch n := len(r.Differences); {
	case r.Identical():
		p("\nno differences\n")
	case n == 0:
		p("\nno differences in the steps both ran\n")
	default:
		p("\n%d differences:\n", n)
	}
	for _, d := range r.Differences {
		p("%s\n", d)
	}
	return err
}

func (run RunResult) summary() string {
	s := fmt.Sprintf("%d of %d steps", run.Steps, run.Total)
	switch {
	case run.Passed:
		s = "passed, " + s
	case run.Error != "":
		s = "stopped after " + s + ": " + run.Error
	}
	return s + fmt.Sprintf(" in %s", run.Duration.Round(time.Millisecond))
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
