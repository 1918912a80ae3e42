package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/scenarios/nemesis"
	"github.com/csisim/csisim/sim/cluster"
)

// nemesisFlags are csisim run's flags for seeded random faults.
type nemesisFlags struct {
	on        bool
	liveness  bool
	shrink    bool
	shrinkOut string
	// trialFile and verdictFile make the process a shrinking trial: run
	// under the schedule in trialFile, write to verdictFile (nemesisTrial).
	trialFile   string
	verdictFile string
	// failed is how the last run failed, for a sweep's --json-result
	// (nil: it passed, or only liveness suffered).
	failed *failure
	// known are the KNOWN lines of the last run's known-upstream
	// violations (nemesis.KnownUpstream), for --json-result.
	known []string
	// clusterTime is the virtual time the last run's steps took.
	clusterTime time.Duration
}

func addNemesisFlags(fs *flag.FlagSet) *nemesisFlags {
	n := &nemesisFlags{}
	fs.BoolVar(&n.on, "nemesis", false, "add seeded random faults at virtual times (swarm style: the seed picks the fault kinds, then\n"+
		"a few faults of them); the same --seed gives the same faults. Only invariant violations, errors and\n"+
		"crashes fail the run; a step the faults keep from passing is reported as liveness")
	fs.BoolVar(&n.liveness, "liveness", false, "with --nemesis: a step that does not pass fails the run too")
	fs.BoolVar(&n.shrink, "shrink", false, "with --nemesis, when the run fails: reduce its faults to a minimal set that fails the same way\n"+
		"and print it as a scenario with fault steps (the runs are child processes, so that a crash can be shrunk)")
	fs.StringVar(&n.shrinkOut, "shrink-out", "", "with --shrink: write the shrunk scenario to this file instead of stdout; {seed} in the name stands for the seed\n"+
		"(with --seeds, the name needs it: each failing seed writes its own file)")
	fs.StringVar(&n.trialFile, "nemesis-trial", "", "internal, for --shrink: run under the schedule in this file")
	fs.StringVar(&n.verdictFile, "nemesis-verdict", "", "internal, for --shrink: write where faults fired and the verdict to this file")
	return n
}

// check refuses combinations that cannot work, before anything starts.
func (n *nemesisFlags) check(backend string) error {
	switch {
	case !n.on && (n.shrink || n.liveness || n.shrinkOut != "" || n.trialFile != ""):
		return errors.New("--liveness, --shrink and --shrink-out go with --nemesis")
	case n.shrinkOut != "" && !n.shrink:
		return errors.New("--shrink-out goes with --shrink")
	case (n.trialFile == "") != (n.verdictFile == ""):
		return errors.New("--nemesis-trial and --nemesis-verdict go together")
	case n.on && backend != "sim":
		return errors.New("--nemesis fires faults at virtual times: it needs --backend sim")
	}
	return nil
}

// run is csisim run --nemesis: survey the scenario (one run
// without faults: its span and what it has to aim at), draw the seed's
// schedule, print it, run under it with the timeline shown, and with
// --shrink reduce a failing schedule and write it as a scenario.
//
// Without --shrink the run is in this process, as every csisim run is.
// With --shrink the run and every trial is a child process (this binary,
// --nemesis-trial), so that a run that crashes the simulator — a panic in
// a simulated component — is a verdict to shrink, not the end.
func (n *nemesisFlags) run(ctx context.Context, fs *flag.FlagSet, sc *scenarios.Scenario, cfg cluster.Config, traceFile string, stdout, stderr io.Writer) int {
	h := &nemesis.Harness{Scenario: sc, Liveness: n.liveness, Progress: stderr,
		Start: func(ctx context.Context, quiet bool) (nemesis.Cluster, error) {
			c := cfg
			if quiet {
				c.OnEntry = nil
			}
			return cluster.Start(ctx, c)
		}}
	if n.trialFile != "" {
		return n.trial(ctx, h, traceFile, stderr)
	}
	fmt.Fprintf(stdout, "scenario %s (%s), seed %d, nemesis\n", sc.Name, sc.File, cfg.Seed)
	targets, baseline, err := h.Survey(ctx)
	if err != nil {
		n.failed = &failure{Kind: "error", Cause: "run", Summary: "surveying the scenario: " + firstLine(err.Error()), Detail: err.Error()}
		return nemesisFailed(ctx, "surveying the scenario", err, stderr)
	}
	sched := nemesis.Generate(cfg.Seed, targets)
	fmt.Fprint(stdout, sched.String())
	if baseline.Verdict.Class != nemesis.Pass {
		fmt.Fprintf(stdout, "note: without faults the scenario ends with %s\n", baseline.Verdict.Signature())
	}

	verdict, fired, summary, err := n.runSchedule(ctx, h, fs, sched, traceFile, cfg.OnEntry != nil, stdout)
	if err != nil {
		n.failed = &failure{Kind: "error", Cause: "run", Summary: "running the scenario: " + firstLine(err.Error()), Detail: err.Error()}
		return nemesisFailed(ctx, "running the scenario", err, stderr)
	}
	firedNote := fmt.Sprintf("%d of %d timed faults fired", fired, len(sched.Timed()))
	n.known = verdict.Known
	switch {
	case verdict.Failed(n.liveness):
		n.failed = &failure{Kind: "failure", Cause: "nemesis", Summary: verdict.Signature() + " (" + firedNote + ")", Detail: verdict.Message}
		fmt.Fprintf(stderr, "\nFAILED under nemesis seed %d (%s; %s):\n%s\nschedule:\n%s", cfg.Seed, verdict.Signature(), firedNote, verdict.Message, indent(sched.Lines()))
	case verdict.Class == nemesis.KnownUpstream:
		fmt.Fprintf(stdout, "\nKNOWN UPSTREAM under nemesis seed %d (%s; %s; not a failure: Kubernetes left it so, not the driver):\n%s\n",
			cfg.Seed, verdict.Signature(), firedNote, verdict.Message)
		return 0
	case verdict.Class == nemesis.Liveness:
		fmt.Fprintf(stdout, "\nLIVENESS under nemesis seed %d (%s; %s; not a failure without --liveness):\n%s\n", cfg.Seed, verdict.Signature(), firedNote, verdict.Message)
		return 0
	default:
		fmt.Fprintf(stdout, "\nPASSED under nemesis seed %d%s; %s\n", cfg.Seed, summary, firedNote)
		return 0
	}
	if !n.shrink {
		return 1
	}
	if baseline.Verdict.Signature() == verdict.Signature() {
		fmt.Fprintf(stderr, "\nnothing to shrink: the scenario fails the same way without faults\n")
		return 1
	}
	if err := n.shrinkAndWrite(ctx, fs, h, sched, verdict, stdout, stderr); err != nil {
		return nemesisFailed(ctx, "shrinking", err, stderr)
	}
	return 1
}

// runSchedule runs the scenario under sched: in this process, or with
// --shrink in a child (childTrial), with the timeline shown if verbose. It
// returns the verdict, how many faults fired, and for a run in this
// process the end of the PASSED line (steps, time, invariants).
func (n *nemesisFlags) runSchedule(ctx context.Context, h *nemesis.Harness, fs *flag.FlagSet, sched nemesis.Schedule,
	traceFile string, verbose bool, stdout io.Writer) (verdict nemesis.Verdict, fired int, summary string, err error) {
	sc := h.Scenario
	if n.shrink {
		h.RunTrial = childTrial(fs, sc.File, childOptions{})
		main := childTrial(fs, sc.File, childOptions{stdout: stdout, trace: traceFile, verbose: verbose})
		t, err := main(ctx, sched)
		n.clusterTime = t.ClusterTime
		return t.Verdict, len(t.Fired), "", err
	}
	r, err := h.Run(ctx, sched, false)
	if r != nil && traceFile != "" {
		err = errors.Join(err, writeTrace(traceFile, r.Entries, r.Root))
	}
	if err != nil {
		return verdict, 0, "", err
	}
	n.clusterTime = r.Result.Duration
	summary = fmt.Sprintf(": %d steps, %s of cluster time%s", len(r.Result.Steps), r.Result.Duration, invariantSummary(r.Result.Invariants))
	return r.Verdict, len(r.Result.Fired), summary, nil
}

// shrinkAndWrite shrinks the failing schedule, writes it as a scenario
// with fault steps, and checks that scenario fails the same way.
func (n *nemesisFlags) shrinkAndWrite(ctx context.Context, fs *flag.FlagSet, h *nemesis.Harness, sched nemesis.Schedule, want nemesis.Verdict, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "\nshrinking %d faults (each trial a run)\n", len(sched.Events))
	small, trials, err := h.Shrink(ctx, sched, want)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "shrunk to %d faults in %d trials, failing with %s:\n%s", len(small.Events), trials, want.Signature(), indent(small.Lines()))
	final, err := h.Trial(ctx, small)
	if err != nil {
		return err
	}
	sc := h.Scenario
	source, err := os.ReadFile(sc.File)
	if err != nil {
		return fmt.Errorf("reading the scenario: %w", err)
	}
	in := nemesis.ReproducerInput{Source: source, Scenario: sc, Fired: final.Fired, FromDir: filepath.Dir(sc.File),
		Name: fmt.Sprintf("%s-nemesis-%d", sc.Name, sched.Seed),
		Comment: fmt.Sprintf("# %s with the faults of csisim run --nemesis --seed %d, shrunk to those it needs\n"+
			"# to fail with %s, as fault steps where they fired.", sc.File, sched.Seed, want.Signature())}

	// The check runs a copy beside a temporary file, as a child: the
	// failure may be a crash.
	tmp, err := os.MkdirTemp("", "csisim-shrunk-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	in.ToDir = tmp
	checkText, err := nemesis.Reproducer(in)
	if err != nil {
		return err
	}
	checkFile := filepath.Join(tmp, sc.Name+"-nemesis.yaml")
	if _, err := scenarios.Parse(checkFile, checkText, tmp); err != nil {
		return fmt.Errorf("the shrunk scenario does not load: %w\n%s", err, checkText)
	}
	if err := os.WriteFile(checkFile, checkText, 0o644); err != nil {
		return err
	}
	check, err := childTrial(fs, checkFile, childOptions{})(ctx, nemesis.Schedule{Seed: sched.Seed})
	if err != nil {
		return err
	}
	if check.Verdict.Signature() == want.Signature() {
		fmt.Fprintf(stderr, "the shrunk scenario fails the same way without --nemesis (%s)\n", want.Signature())
	} else {
		fmt.Fprintf(stderr, "warning: the shrunk scenario, run without --nemesis, ends with %s, not %s\n", check.Verdict.Signature(), want.Signature())
	}

	in.ToDir = "."
	out := withSeed(n.shrinkOut, sched.Seed)
	if out != "" {
		in.ToDir = filepath.Dir(out)
	}
	text, err := nemesis.Reproducer(in)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = stdout.Write(text)
		return err
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		return fmt.Errorf("writing the shrunk scenario: %w", err)
	}
	fmt.Fprintf(stderr, "wrote %s\n", out)
	return nil
}

// trialLine is one line of a trial's verdict file: a fault as it fired,
// or, last, the verdict. A trial that crashes leaves the faults that
// fired before the crash.
type trialLine struct {
	Fired   *scenarios.FiredFault `json:",omitempty"`
	Verdict *nemesis.Verdict      `json:",omitempty"`
	// ClusterTime goes with the verdict: the virtual time the run took.
	ClusterTime time.Duration `json:",omitempty"`
}

// trial is the child side of childTrial: run under the schedule in
// --nemesis-trial, write --nemesis-verdict.
func (n *nemesisFlags) trial(ctx context.Context, h *nemesis.Harness, traceFile string, stderr io.Writer) int {
	data, err := os.ReadFile(n.trialFile)
	if err != nil {
		return nemesisFailed(ctx, "reading the schedule", err, stderr)
	}
	var sched nemesis.Schedule
	if err := json.Unmarshal(data, &sched); err != nil {
		return nemesisFailed(ctx, "reading the schedule", fmt.Errorf("%s: %w", n.trialFile, err), stderr)
	}
	out, err := os.Create(n.verdictFile)
	if err != nil {
		return nemesisFailed(ctx, "writing the verdict", err, stderr)
	}
	defer out.Close()
	// Unbuffered: each line is in the file before the next fault fires.
	enc := json.NewEncoder(out)
	h.OnFired = func(f scenarios.FiredFault) { _ = enc.Encode(trialLine{Fired: &f}) }
	r, err := h.Run(ctx, sched, false)
	if r != nil && traceFile != "" {
		err = errors.Join(err, writeTrace(traceFile, r.Entries, r.Root))
	}
	if err != nil {
		return nemesisFailed(ctx, "running the scenario", err, stderr)
	}
	if err := enc.Encode(trialLine{Verdict: &r.Verdict, ClusterTime: r.Result.Duration}); err != nil {
		return nemesisFailed(ctx, "writing the verdict", err, stderr)
	}
	return 0
}

// childOptions say what a child run shows: its timeline on stdout
// (verbose), its trace file.
type childOptions struct {
	stdout  io.Writer
	trace   string
	verbose bool
}

// childTrial runs scenarioFile under a schedule in a child process: this
// binary with the cluster flags of this run (fs) and --nemesis-trial. A
// child that dies without a verdict crashed: the verdict is an Error whose
// Crash names the panic and where it happened, so that two runs crash
// "the same way" when their panics agree.
func childTrial(fs *flag.FlagSet, scenarioFile string, o childOptions) func(context.Context, nemesis.Schedule) (nemesis.Trial, error) {
	return func(ctx context.Context, s nemesis.Schedule) (nemesis.Trial, error) {
		dir, err := os.MkdirTemp("", "csisim-trial-")
		if err != nil {
			return nemesis.Trial{}, err
		}
		defer os.RemoveAll(dir)
		schedFile, verdictFile := filepath.Join(dir, "schedule.json"), filepath.Join(dir, "verdict.jsonl")
		data, err := json.Marshal(s)
		if err != nil {
			return nemesis.Trial{}, err
		}
		if err := os.WriteFile(schedFile, data, 0o600); err != nil {
			return nemesis.Trial{}, err
		}
		args := append([]string{"run"}, clusterFlags(fs)...)
		args = append(args, "--nemesis", "--nemesis-trial="+schedFile, "--nemesis-verdict="+verdictFile)
		if !o.verbose {
			args = append(args, "--quiet")
		}
		if o.trace != "" {
			args = append(args, "--trace="+o.trace)
		}
		exe, err := os.Executable()
		if err != nil {
			return nemesis.Trial{}, err
		}
		cmd := exec.CommandContext(ctx, exe, append(args, scenarioFile)...)
		// Interrupted, the child tears its cluster down as any run does.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = time.Minute
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if o.verbose {
			cmd.Stdout = o.stdout
		}
		runErr := cmd.Run()
		t, found, err := readTrial(verdictFile)
		switch {
		case err != nil:
			return t, err
		case found:
			return t, nil
		case ctx.Err() != nil:
			return t, ctx.Err()
		}
		crash := crashSignature(errOut.String())
		if crash == "" {
			// No verdict and no crash: the run did not happen (a
			// scenario skipped says why on stdout).
			return t, fmt.Errorf("trial run (%v) gave no verdict: %s", runErr, strings.TrimSpace(out.String()+errOut.String()))
		}
		t.Verdict = nemesis.Verdict{Class: nemesis.Error, Crash: crash, Message: firstLines(errOut.String(), 12)}
		return t, nil
	}
}

// readTrial reads a verdict file; found says it holds a verdict.
func readTrial(path string) (nemesis.Trial, bool, error) {
	var t nemesis.Trial
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var l trialLine
		if err := dec.Decode(&l); err != nil {
			// The end, or a line cut short by a crash.
			return t, false, nil
		}
		if l.Fired != nil {
			t.Fired = append(t.Fired, *l.Fired)
		}
		if l.Verdict != nil {
			t.Verdict, t.ClusterTime = *l.Verdict, l.ClusterTime
			return t, true, nil
		}
	}
}

// clusterFlags are the flags of this run a child needs to build the same
// cluster: those set, without the nemesis's own and the outputs.
func clusterFlags(fs *flag.FlagSet) []string {
	skip := map[string]bool{"nemesis": true, "liveness": true, "shrink": true, "shrink-out": true, "nemesis-trial": true,
		"nemesis-verdict": true, "trace": true, "quiet": true, "cpuprofile": true, "memprofile": true, "driver-log": true,
		// A seed of a sweep has --json-result: the result is its run's,
		// which a trial must not write over.
		"json-result": true}
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if !skip[f.Name] {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// crashSignature names a Go crash in a child's stderr: "panic: MESSAGE
// in FUNCTION" with the function of the panicking goroutine's first frame,
// or "" when there is no crash there.
func crashSignature(stderr string) string {
	lines := strings.Split(stderr, "\n")
	msg := ""
	for i, l := range lines {
		if msg == "" && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")) {
			msg = strings.TrimSuffix(l, " [recovered]")
		}
		if msg != "" && strings.HasPrefix(l, "goroutine ") && i+1 < len(lines) {
			fn := lines[i+1]
			if open := strings.LastIndex(fn, "("); open > 0 {
				fn = fn[:open]
			}
			return msg + " in " + strings.TrimPrefix(fn, "github.com/csisim/csisim/")
		}
	}
	return msg
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// nemesisFailed reports a run that could not be carried out.
func nemesisFailed(ctx context.Context, what string, err error, stderr io.Writer) int {
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "csisim: interrupted while %s: %v\n", what, err)
		return 130
	}
	fmt.Fprintf(stderr, "csisim: %s: %v\n", what, err)
	return 1
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
