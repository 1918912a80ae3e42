package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/drivers/profiles"
	"github.com/csisim/csisim/drivers/sanityrun"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/scenarios/library"
	"github.com/csisim/csisim/sim/clusterprofile"
)

func testCommand() *command {
	return &command{
		name:    "test",
		summary: "test a CSI driver: csi-sanity, then every library scenario it can run",
		usage:   []string{"csisim test --driver PROFILE [flags]"},
		about: "Tests a CSI driver: csi-sanity against it, then every scenario of the library on the simulator\n" +
			"with it, with the scenario's invariants. A scenario that needs what the driver lacks (as it\n" +
			"reports itself when asked, or as the profile says) is skipped with the reason. Prints a line\n" +
			"per scenario and the totals; exits 0 if nothing failed, 1 if something did, 2 on a usage\n" +
			"error.",
		prefix:  "csisim test",
		maxArgs: -1, signals: true,
		new: func() subcommand { return &testCmd{} },
	}
}

// testCmd is `csisim test --driver PROFILE`: the one command a driver
// repository's CI runs. It runs csi-sanity against the profile's driver
// (in a child process, `csisim sanity`), then every scenario of the
// library (or --scenarios) on the simulator with that driver, each in a
// child process of its own (`csisim test-scenario`), skipping with the
// reason those that need what the driver lacks. It prints a table, writes
// a JUnit report if asked, and exits 0 if nothing failed (skips are fine),
// 1 if something did, 2 on a usage error.
type testCmd struct {
	invocation
	driver      string
	scenarios   string
	focus       string
	skipSanity  bool
	sanityFocus string
	sanitySkips stringList
	parallel    int
	seed        uint64
	junitFile   string
}

func (c *testCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.driver, "driver", "", "the driver profile (required): a shipped profile's name ("+listOr(profiles.Names())+") or a profile file")
	fs.StringVar(&c.scenarios, "scenarios", "", "the scenarios to run: a directory (its *.yaml), a glob or a file;\n"+
		"default: the library built into csisim (scenarios/library)")
	fs.StringVar(&c.focus, "focus", "", "run only the scenarios whose name, and the csi-sanity specs whose full text, match this regular expression")
	fs.BoolVar(&c.skipSanity, "skip-sanity", false, "do not run csi-sanity")
	fs.StringVar(&c.sanityFocus, "sanity-focus", "", "run only the csi-sanity specs whose full text matches this regular expression (instead of --focus)")
	fs.Var(&c.sanitySkips, "sanity-skip", "skip the csi-sanity specs whose full text matches this regular expression (repeatable),\n"+
		"besides those the profile's sanity.skip lists")
	fs.IntVar(&c.parallel, "parallel", 1, "how many scenarios run at once, each in a csisim process and on a cluster of its own")
	fs.Uint64Var(&c.seed, "seed", 1, "the seed every scenario runs with")
	fs.StringVar(&c.junitFile, "junit", "", "write a JUnit XML report to this file: a test case per csi-sanity spec and per scenario")
}

func (c *testCmd) Run(ctx context.Context) error {
	p, focusRE, err := c.check()
	if err != nil {
		return err
	}
	if err := checkRoot(p.Has(profile.RealMounts), euid()); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the csisim binary to run the children with: %w", err)
	}
	sweepDeadRuns(c.stderr)
	// The run's own directory: the built driver and the extracted library.
	root, err := runroot.New("test")
	if err != nil {
		return err
	}
	defer func() {
		if err := root.Close(); err != nil {
			fmt.Fprintf(c.stderr, "csisim test: cleaning up: %v\n", err)
		}
	}()
	files, err := scenarioFiles(c.scenarios, root.Path("library"))
	if err != nil {
		return usageError(err)
	}
	t := driverTest{profile: p, driverArg: c.driver, binary: exe, seed: c.seed, scenariosArg: c.scenarios, focus: c.focus,
		sanityFocus: c.focus, sanitySkips: c.sanitySkips}
	if c.sanityFocus != "" {
		t.sanityFocus = c.sanityFocus
	}
	if c.scenarios == "" {
		t.libraryDir = root.Path("library")
	}
	return c.test(ctx, t, files, focusRE)
}

// check checks the flags and loads the profile.
func (c *testCmd) check() (*profile.Profile, *regexp.Regexp, error) {
	switch {
	case len(c.args) != 0:
		return nil, nil, usagef("unexpected arguments %q: scenarios are chosen with --scenarios", c.args)
	case c.driver == "":
		return nil, nil, usagef("--driver is required: a shipped profile (%s) or a profile file", listOr(profiles.Names()))
	case c.parallel < 1:
		return nil, nil, usagef("--parallel %d: at least one scenario must run at a time", c.parallel)
	}
	var focusRE *regexp.Regexp
	if c.focus != "" {
		var err error
		if focusRE, err = regexp.Compile(c.focus); err != nil {
			return nil, nil, usagef("--focus: %v", err)
		}
	}
	p, err := profiles.Load(c.driver)
	if err != nil {
		return nil, nil, usageError(err)
	}
	return p, focusRE, nil
}

// test runs csi-sanity and the scenarios, prints the table and the
// totals, and writes the JUnit report.
func (c *testCmd) test(ctx context.Context, t driverTest, files []string, focusRE *regexp.Regexp) error {
	p := t.profile
	started := time.Now()
	fmt.Fprintf(c.stdout, "csisim test: driver %s (%s)\n", p.Name, p.File)
	if p.Start.Build != "" {
		// Built once here, into csisim's cache, where every child finds it.
		if _, err := clusterprofile.Build(ctx, p.Start.Build, c.stderr); err != nil {
			return fmt.Errorf("driver profile %s: %w", p.File, err)
		}
	}
	// What the driver says of itself decides what runs; a profile that
	// contradicts it is refused before anything runs.
	info, err := clusterprofile.Ask(ctx, p, clusterprofile.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "the driver reports: %s\n", info)

	var sanity *sanityrun.Report
	if !c.skipSanity {
		sanity = t.runSanity(ctx)
		printSanity(c.stdout, sanity)
	}
	scs := t.loadScenarios(files, focusRE)
	fmt.Fprintf(c.stdout, "\nscenarios (%s, seed %d, %d at a time):\n", describeScenarios(c.scenarios, len(scs)), c.seed, c.parallel)
	results := t.runScenarios(ctx, scs, c.parallel, func(r scenarioResult) { printScenario(c.stdout, r) })
	wall := time.Since(started)
	failed := printTotals(c.stdout, sanity, results, wall)

	var outcome error
	if failed {
		outcome = errFailed
	}
	if ctx.Err() != nil {
		fmt.Fprintln(c.stderr, "csisim test: interrupted")
		outcome = errInterrupted
	}
	if c.junitFile != "" {
		if err := writeJUnit(c.junitFile, testJUnit(p, sanity, results, t.replay, wall)); err != nil {
			fmt.Fprintf(c.stderr, "csisim test: %v\n", err)
			if outcome == nil {
				outcome = errFailed
			}
		}
	}
	return outcome
}

// driverTest is one `csisim test`: the driver, and how its children run.
type driverTest struct {
	profile      *profile.Profile
	driverArg    string // --driver as given, for the children
	binary       string // csisim itself
	seed         uint64
	scenariosArg string // --scenarios as given, for the replay command
	focus        string
	// sanityFocus and sanitySkips choose csi-sanity's specs.
	sanityFocus string
	sanitySkips []string
	// libraryDir is where the built-in library was written out, ""
	// with --scenarios; messages name its files library/NAME.yaml.
	libraryDir string
}

// childStopGrace is how long an interrupted child may take to tear down
// what it made before it is killed.
const childStopGrace = time.Minute

// runSanity runs `csisim sanity` as a child and reads its report.
func (t driverTest) runSanity(ctx context.Context) *sanityrun.Report {
	args := []string{"sanity", "--driver", t.driverArg}
	if t.sanityFocus != "" {
		args = append(args, "--sanity-focus", t.sanityFocus)
	}
	for _, s := range t.sanitySkips {
		args = append(args, "--sanity-skip", s)
	}
	args = append(args, "--json-result", "/dev/fd/"+strconv.Itoa(resultFD))
	out := runChild(ctx, t.binary, args, childStopGrace)
	var r sanityrun.Report
	if out.startErr != nil || len(out.result) == 0 || json.Unmarshal(out.result, &r) != nil {
		why := errors.Join(out.startErr, out.err)
		if why == nil {
			why = errors.New("it wrote no result")
		}
		r = sanityrun.Report{Driver: t.profile.Name, Error: fmt.Sprintf("csi-sanity ended without a result: %v\n%s", why, lastLines(out.output, 20))}
	}
	return &r
}

// testScenario is a scenario to run, or the reason it cannot be.
type testScenario struct {
	name string
	file string // as loaded
	sc   *scenarios.Scenario
	// skip says why the scenario does not run with this driver.
	skip string
	// loadErr: the file does not load (a failure of the scenario).
	loadErr error
}

// scenarioResult is how one scenario went.
type scenarioResult struct {
	pos     int    // in the list of scenarios
	name    string // the scenario's
	skipped string
	seedResult
}

// loadScenarios loads each file, keeps those focus matches, and finds out
// which ones the driver cannot run.
func (t driverTest) loadScenarios(files []string, focus *regexp.Regexp) []testScenario {
	var out []testScenario
	for _, f := range files {
		ts := testScenario{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), file: f}
		ts.sc, ts.loadErr = scenarios.Load(f)
		if ts.loadErr == nil {
			ts.name = ts.sc.Name
			ts.skip = skipReason(t.profile, ts.sc)
		}
		if focus != nil && !focus.MatchString(ts.name) {
			continue
		}
		out = append(out, ts)
	}
	return out
}

// runScenarios runs each scenario that can run in a child process,
// parallel at a time, and calls report for each in order as soon as it
// and those before it are known.
func (t driverTest) runScenarios(ctx context.Context, scs []testScenario, parallel int, report func(scenarioResult)) []scenarioResult {
	// runSeeds orders and runs work by seed; here a "seed" is a
	// scenario's position in scs.
	positions := make([]uint64, len(scs))
	for i := range scs {
		positions[i] = uint64(i)
	}
	results := make([]scenarioResult, len(scs))
	runSeeds(ctx, positions, parallel, func(ctx context.Context, pos uint64) seedResult {
		ts := scs[pos]
		r := scenarioResult{pos: int(pos), name: ts.name}
		switch {
		case ts.loadErr != nil:
			r.seedResult = seedResult{Seed: t.seed, Steps: "no steps", Failure: &failure{Kind: "error", Cause: "load",
				Summary: firstLine(ts.loadErr.Error()), Detail: ts.loadErr.Error() + "\n"}}
		case ts.skip != "":
			r.skipped = ts.skip
			r.seedResult = seedResult{Seed: t.seed, Steps: "no steps"}
		default:
			child := childRun{binary: t.binary, args: t.scenarioArgs, file: ts.file, stopGrace: childStopGrace}
			r.seedResult = child.runSeed(ctx, t.seed)
			r.skipped = r.Skipped // the driver, asked, lacks what it needs
		}
		if f := r.Failure; f != nil && t.libraryDir != "" {
			f.Summary = strings.ReplaceAll(f.Summary, t.libraryDir+"/", "library/")
			f.Detail = strings.ReplaceAll(f.Detail, t.libraryDir+"/", "library/")
		}
		results[pos] = r
		// What runSeeds hands to report: the position, as the "seed".
		return seedResult{Seed: pos}
	}, func(sr seedResult) { report(results[sr.Seed]) })
	var out []scenarioResult
	for _, r := range results {
		if r.Steps != "" { // "" : never started, interrupted first
			out = append(out, r)
		}
	}
	return out
}

// scenarioArgs is the command line of the child that runs one scenario.
func (t driverTest) scenarioArgs(seed uint64) []string {
	return []string{"test-scenario", "--driver", t.driverArg, "--seed", strconv.FormatUint(seed, 10)}
}

// replay is the command that runs one scenario of the test alone.
func (t driverTest) replay(name string) string {
	words := []string{"csisim", "test", "--driver", shellQuote(t.driverArg), "--skip-sanity"}
	if t.scenariosArg != "" {
		words = append(words, "--scenarios", shellQuote(t.scenariosArg))
	}
	if t.seed != 1 {
		words = append(words, "--seed", strconv.FormatUint(t.seed, 10))
	}
	return strings.Join(append(words, "--focus", shellQuote("^"+regexp.QuoteMeta(name)+"$")), " ")
}

// scenarioFiles lists the scenario files of --scenarios: a directory's
// *.yaml, a glob's matches, or one file. Without it, the library built
// into csisim is written to extractTo and its scenarios listed.
func scenarioFiles(arg, extractTo string) ([]string, error) {
	if arg == "" {
		if err := os.CopyFS(extractTo, library.FS); err != nil {
			return nil, fmt.Errorf("writing out the built-in scenario library: %w", err)
		}
		arg = extractTo
	}
	var files []string
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		files, err = filepath.Glob(filepath.Join(arg, "*.yaml"))
		if err != nil {
			return nil, fmt.Errorf("--scenarios %s: %w", arg, err)
		}
	} else if err == nil {
		files = []string{arg}
	} else {
		files, err = filepath.Glob(arg)
		if err != nil {
			return nil, fmt.Errorf("--scenarios %s: %w", arg, err)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--scenarios %s: no scenario files there", arg)
	}
	sort.Strings(files)
	return files, nil
}

// describeScenarios says where the scenarios come from, for the header.
func describeScenarios(arg string, n int) string {
	if arg == "" {
		arg = "the built-in library"
	}
	return fmt.Sprintf("%s from %s", plural(n, "scenario"), arg)
}

// printSanity prints csi-sanity's counts, each failing spec with its
// failure, and the skipped specs grouped by reason.
func printSanity(w io.Writer, r *sanityrun.Report) {
	fmt.Fprintf(w, "\ncsi-sanity: %d passed, %d failed, %d skipped, in %s\n",
		r.Count(sanityrun.Passed), r.Count(sanityrun.Failed), r.Count(sanityrun.Skipped), r.Duration.Round(time.Millisecond))
	if r.Error != "" {
		fmt.Fprintf(w, "  ERROR %s\n", strings.ReplaceAll(strings.TrimSpace(r.Error), "\n", "\n        "))
	}
	for _, s := range r.Specs {
		if s.State == sanityrun.Failed {
			fmt.Fprintf(w, "  FAIL  %s\n        %s\n", s.Name, specFailure(s.Message))
		}
	}
	var reasons []string
	count := map[string]int{}
	for _, s := range r.Specs {
		if s.State == sanityrun.Skipped {
			if count[s.Message] == 0 {
				reasons = append(reasons, s.Message)
			}
			count[s.Message]++
		}
	}
	for _, why := range reasons {
		fmt.Fprintf(w, "  skip  %3d × %s\n", count[why], firstLine(why))
	}
	for _, note := range r.Notes() {
		fmt.Fprintf(w, "  note  %s\n", note)
	}
}

// specFailure is a csi-sanity failure in a line: Gomega's message without
// the types and structs of the Go values it dumps, e.g. "Unexpected
// error: rpc error: code = Unimplemented desc = … occurred", "… Expected 3
// to equal 5".
func specFailure(msg string) string {
	var words []string
	depth := 0
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasSuffix(line, "{"):
			depth++
		case strings.HasPrefix(line, "}"):
			depth = max(depth-1, 0)
		case depth > 0:
		case strings.HasPrefix(line, "<"):
			// "<codes.Code>: 5": the value without its type; a dump that
			// goes on below ("<*status.Error | 0x…>:") is left out.
			if _, value, ok := strings.Cut(line, ">: "); ok && strings.TrimSpace(value) != "" {
				words = append(words, strings.TrimSpace(value))
			}
		default:
			words = append(words, line)
		}
	}
	out := strings.Join(words, " ")
	if len(out) > 240 {
		out = out[:240] + "…"
	}
	return out
}

// printScenario prints a scenario's line: PASS, SKIP with the reason, or
// FAIL with the first failure.
func printScenario(w io.Writer, r scenarioResult) {
	name := r.name
	switch {
	case r.skipped != "":
		fmt.Fprintf(w, "  SKIP  %-40s  %s\n", name, r.skipped)
	case r.Interrupted:
		fmt.Fprintf(w, "  INTR  %-40s  interrupted\n", name)
	case r.Failure != nil:
		fmt.Fprintf(w, "  FAIL  %-40s  %s: %s\n", name, r.Steps, r.Failure.Summary)
	case r.known():
		fmt.Fprintf(w, "  KNOWN %-40s  %s, %s of cluster time in %s; not a failure: a known Kubernetes bug broke invariants\n", name, r.Steps,
			r.ClusterTime.Round(time.Millisecond), r.Wall.Round(time.Millisecond))
	default:
		fmt.Fprintf(w, "  PASS  %-40s  %s, %s of cluster time in %s\n", name, r.Steps, r.ClusterTime.Round(time.Millisecond), r.Wall.Round(time.Millisecond))
	}
	if !r.Interrupted {
		for _, k := range r.KnownUpstream {
			fmt.Fprintf(w, "        %s\n", k)
		}
	}
}

// printTotals prints the totals and says whether anything failed.
func printTotals(w io.Writer, sanity *sanityrun.Report, results []scenarioResult, wall time.Duration) bool {
	var passed, failed, skipped, interrupted, known int
	for _, r := range results {
		switch {
		case r.skipped != "":
			skipped++
		case r.Interrupted:
			interrupted++
		case r.Failure != nil:
			failed++
		case r.known():
			known++ // counted apart: neither passed nor failed
		default:
			passed++
		}
	}
	fmt.Fprintf(w, "\nscenarios: %d passed, %d failed, %d skipped", passed, failed, skipped)
	if known > 0 {
		fmt.Fprintf(w, ", %d known-upstream", known)
	}
	if interrupted > 0 {
		fmt.Fprintf(w, ", %d interrupted", interrupted)
	}
	fmt.Fprintln(w)
	anyFailed := failed > 0
	if sanity != nil {
		passed += sanity.Count(sanityrun.Passed)
		failed += sanity.Count(sanityrun.Failed)
		skipped += sanity.Count(sanityrun.Skipped)
		anyFailed = anyFailed || sanity.Error != "" || sanity.Count(sanityrun.Failed) > 0
	}
	verdict := "PASSED"
	switch {
	case anyFailed:
		verdict = "FAILED"
	case interrupted > 0:
		verdict = "INTERRUPTED"
	}
	fmt.Fprintf(w, "%s in %s\n", verdict, wall.Round(time.Second))
	// The closing line CI systems read: "N passed, N failed, N skipped".
	fmt.Fprintf(w, "total: %d passed, %d failed, %d skipped", passed, failed, skipped)
	if known > 0 {
		fmt.Fprintf(w, ", %d known-upstream", known)
	}
	fmt.Fprintln(w)
	return anyFailed
}
