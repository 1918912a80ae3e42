package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/csisim/csisim/scenarios"
)

// Report is the outcome of running one scenario on both backends.
type Report struct {
	Scenario string `json:"scenario"`
	File     string `json:"file"`
	Seed     uint64 `json:"seed"`
	// Speedup is how many times faster both sides ran the scenario's
	// node-loss timing (Scenario.SpeedUp, cluster.timing); 0: as v1.37.
	Speedup int `json:"speedup,omitempty"`
	// RealNodes are the nodes the real run ran as real kubelets
	// (--real-nodes); none: all simulated.
	RealNodes []string  `json:"realNodes,omitempty"`
	Sim       RunResult `json:"sim"`
	Real      RunResult `json:"real"`
	// Differences are in the order they first appear; those that are only
	// timing are marked so (Difference.Timing), those of behaviour
	// explained by the scenario's fidelity: section or not
	// (Difference.Explanation, explained.go).
	Differences []Difference `json:"differences"`
	// Stale are the entries of the scenario's fidelity: section that
	// apply to this diff and explain none of its differences.
	Stale []scenarios.Explanation `json:"stale,omitempty"`
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
	Error string `json:"error,omitempty"`
	// Duration is the wall time the steps took; ClusterTime, for the
	// simulator, the virtual time they took.
	Duration    time.Duration `json:"durationNanos"`
	ClusterTime time.Duration `json:"clusterTimeNanos"`
	// Snapshots are the normalised snapshots, one at the end of each step
	// that ran.
	Snapshots []Snapshot `json:"snapshots"`
	// History is every value each aspect took in the run (history.go).
	History History `json:"-"`
}

// Behaviour are the differences in what happened: all but timing.
func (r *Report) Behaviour() []Difference { return r.differences(false) }

// Timing are the differences only in when things happened.
func (r *Report) Timing() []Difference { return r.differences(true) }

func (r *Report) differences(timing bool) []Difference {
	var out []Difference
	for _, d := range r.Differences {
		if d.Timing == timing {
			out = append(out, d)
		}
	}
	return out
}

// Complete says both runs ran the same steps and neither stopped early.
func (r *Report) Complete() bool {
	return r.Sim.Error == "" && r.Real.Error == "" && r.Sim.Steps == r.Real.Steps
}

// Agree says the runs agree: both ran every step, and they differ in no
// behaviour that the scenario's fidelity: section does not explain;
// strict, not even in timing, and the section has no stale entry.
func (r *Report) Agree(strict bool) bool {
	if !r.Complete() || len(r.Unexplained()) > 0 {
		return false
	}
	return !strict || len(r.Timing()) == 0 && len(r.Stale) == 0
}

// WriteText writes the report for a person: the two runs, each difference
// of behaviour on a line, then the differences of timing apart.
func (r *Report) WriteText(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("scenario %s (%s), seed %d", r.Scenario, r.File, r.Seed)
	if r.Speedup > 1 {
		p(", timing sped up %d times", r.Speedup)
	}
	p("\n")
	for _, run := range []RunResult{r.Sim, r.Real} {
		p("  %-10s %s\n", run.Backend+":", run.summary())
	}
	behaviour, timing := r.Behaviour(), r.Timing()
	switch n, u := len(behaviour), len(r.Unexplained()); {
	case n == 0 && r.Complete():
		p("\nno differences\n")
	case n == 0:
		p("\nno differences in the steps both ran\n")
	default:
		p("\n%d differences (%d explained by the scenario's fidelity: section, %d unexplained):\n", n, n-u, u)
	}
	for _, line := range r.lines(behaviour) {
		p("%s\n", line)
	}
	if len(r.Stale) > 0 {
		p("\nstale: %d entries of the scenario's fidelity: section explain no difference:\n", len(r.Stale))
		for _, e := range r.Stale {
			p("  line %d: %s\n", e.Line, e)
		}
	}
	if len(timing) > 0 {
		p("\ntiming: %d differences only in when things happened:\n", len(timing))
		for _, d := range timing {
			p("%s\n", d)
		}
	}
	return err
}

// lines are the differences as a report prints them, each with whether
// the scenario explains it on the line below. Where one run has no
// managedFields at all (a simulator from before fakekube kept them, a
// report read back), its differences in managers say that one thing, on
// one line in place of the first of them; the JSON report keeps each.
func (r *Report) lines(diffs []Difference) []string {
	var without string
	switch {
	case !hasManagers(r.Sim.Snapshots) && hasManagers(r.Real.Snapshots):
		without = "simulator"
	case !hasManagers(r.Real.Snapshots) && hasManagers(r.Sim.Snapshots):
		without = "real"
	}
	var out, notes []string
	managers, first := 0, -1
	for _, d := range diffs {
		if without != "" && d.Field == "managers" {
			managers++
			if first >= 0 {
				continue
			}
			first = len(out)
		}
		out, notes = append(out, d.String()), append(notes, d.note())
	}
	if managers > 1 {
		out[first] = fmt.Sprintf("managers: the %s run's objects have no managedFields at all (%d differences, the first: %s)",
			without, managers, out[first])
	}
	for k, note := range notes {
		if note != "" {
			out[k] += "\n" + note
		}
	}
	return out
}

// hasManagers says whether any object of the snapshots has managers.
func hasManagers(snaps []Snapshot) bool {
	for _, s := range snaps {
		for _, o := range s.Objects {
			if len(o.Managers) > 0 {
				return true
			}
		}
	}
	return false
}

func (run RunResult) summary() string {
	s := fmt.Sprintf("%d of %d steps", run.Steps, run.Total)
	switch {
	case run.Passed:
		s = "passed, " + s
	case run.Error != "":
		s = "stopped after " + s + ": " + run.Error
	}
	s += fmt.Sprintf(" in %s", run.Duration.Round(time.Millisecond))
	if run.ClusterTime > 0 {
		s += fmt.Sprintf(" (%s of cluster time)", run.ClusterTime.Round(time.Millisecond))
	}
	return s
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
