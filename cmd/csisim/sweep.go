package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sweep is `csisim run --seeds`: one scenario under many seeds, each on a
// simulated cluster of its own, in a process of its own (childRun).
type sweep struct {
	run       seedRun
	scenario  string   // the scenario's name, for the report
	file      string   // the scenario file as the user named it
	seedsSpec string   // --seeds as given, for the header
	shard     shard    // which part of the seeds this process runs
	seeds     []uint64 // the shard's seeds, ascending
	parallel  int
	junitFile string
	// replay is the command that runs one seed alone, the same way.
	replay func(seed uint64) string
}

// runSweep runs the sweep, prints one line per seed in seed order (the
// same order and the same verdicts whatever parallel is) and a summary,
// writes the JUnit report if asked to, and returns the exit code: 0 if
// every seed passed, 1 if any failed, 130 if interrupted.
func runSweep(ctx context.Context, sw sweep, stdout, stderr io.Writer) int {
	fmt.Fprintf(stdout, "scenario %s (%s), %s\n", sw.scenario, sw.file, sw.describeSeeds())
	start := time.Now()
	p := newSeedPrinter(sw, stdout)
	outcomes := runSeeds(ctx, sw.seeds, sw.parallel, sw.run, p.print)
	wall := time.Since(start)
	interrupted := ctx.Err() != nil
	p.summary(outcomes, wall, interrupted)

	code := 0
	switch {
	case interrupted:
		code = 130
	case len(failedSeeds(outcomes)) > 0:
		code = 1
	}
	if sw.junitFile != "" {
		report := junitReport(sw.scenario, sw.file, outcomes, sw.replay, wall)
		if err := writeJUnit(sw.junitFile, report); err != nil {
			fmt.Fprintf(stderr, "csisim: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// describeSeeds is the header's account of which seeds run and how.
func (sw sweep) describeSeeds() string {
	s := "seeds " + sw.seedsSpec
	if sw.shard != wholeSweep {
		s += ", shard " + sw.shard.String()
	}
	return fmt.Sprintf("%s: %s, %d at a time", s, plural(len(sw.seeds), "seed"), sw.parallel)
}

// seedRun is a function that runs the scenario under one seed and tears
// down what the run made, also when ctx ends first.
type seedRun func(ctx context.Context, seed uint64) seedResult

// runSeeds runs each seed with run, parallel at a time, and calls report
// for each outcome in the order of seeds as soon as it and those before it
// are known. It returns when every run it started has returned (and torn
// its cluster down). After ctx ends it starts no more runs; the seeds it
// did not start are left out of the outcomes.
func runSeeds(ctx context.Context, seeds []uint64, parallel int, run seedRun, report func(seedResult)) []seedResult {
	type done struct {
		pos    int
		result seedResult
	}
	positions := make(chan int)
	results := make(chan done)
	go func() {
		defer close(positions)
		for pos := range seeds {
			select {
			case positions <- pos:
			case <-ctx.Done():
				return
			}
		}
	}()
	var workers sync.WaitGroup
	for range max(parallel, 1) {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for pos := range positions {
				if ctx.Err() != nil {
					continue // the feeder may have handed this one out as ctx ended
				}
				results <- done{pos, run(ctx, seeds[pos])}
			}
		}()
	}
	go func() {
		workers.Wait()
		close(results)
	}()

	finished := make([]*seedResult, len(seeds))
	next := 0 // the first seed not reported yet
	for d := range results {
		finished[d.pos] = &d.result
		for next < len(seeds) && finished[next] != nil {
			report(*finished[next])
			next++
		}
	}
	var outcomes []seedResult
	for pos, o := range finished {
		if o == nil {
			continue // never started
		}
		if pos >= next {
			report(*o) // after a seed that never started
		}
		outcomes = append(outcomes, *o)
	}
	return outcomes
}

// seedPrinter prints a sweep's lines: one per seed, aligned, and for a
// failing seed its first failure and the command that replays it.
type seedPrinter struct {
	sw        sweep
	stdout    io.Writer
	seedWidth int // the widest seed's digits, to align the columns
}

func newSeedPrinter(sw sweep, stdout io.Writer) *seedPrinter {
	width := 1
	for _, s := range sw.seeds {
		width = max(width, len(strconv.FormatUint(s, 10)))
	}
	return &seedPrinter{sw: sw, stdout: stdout, seedWidth: width}
}

func (p *seedPrinter) print(r seedResult) {
	verdict := "PASS"
	switch {
	case r.Interrupted:
		verdict = "INTR"
	case r.Failure != nil:
		verdict = "FAIL"
	case r.known():
		verdict = "KNOWN"
	}
	fmt.Fprintf(p.stdout, "seed %-*d  %s  %-10s  %s of cluster time in %s\n", p.seedWidth, r.Seed, verdict, r.Steps,
		r.ClusterTime.Round(time.Millisecond), r.Wall.Round(time.Millisecond))
	if r.Interrupted {
		return
	}
	if r.Failure != nil {
		fmt.Fprintf(p.stdout, "    %s\n", r.Failure.Summary)
	}
	// Printed whenever the run has them, also beside a failure.
	for _, k := range r.KnownUpstream {
		fmt.Fprintf(p.stdout, "    %s\n", k)
	}
	if r.Failure != nil || r.known() {
		fmt.Fprintf(p.stdout, "    replay: %s\n", p.sw.replay(r.Seed))
	}
}

// summary is the sweep's last line. Seeds whose only violations a known
// upstream bug caused are counted apart: not failed, not passed either.
func (p *seedPrinter) summary(outcomes []seedResult, wall time.Duration, interrupted bool) {
	failed, known := failedSeeds(outcomes), knownSeeds(outcomes)
	rate := ""
	if secs := wall.Seconds(); secs > 0 && len(outcomes) > 0 {
		rate = fmt.Sprintf(" (%.1f seeds/s)", float64(len(outcomes))/secs)
	}
	knownNote := ""
	if len(known) > 0 {
		knownNote = fmt.Sprintf("; %d known-upstream (%s: %s), not failures", len(known), seedList(known), strings.Join(upstreamBugs(outcomes), ", "))
	}
	switch {
	case interrupted:
		fmt.Fprintf(p.stdout, "\nINTERRUPTED: %d of %s ran, %d failed%s, in %s; every cluster was torn down\n",
			len(outcomes), plural(len(p.sw.seeds), "seed"), len(failed), knownNote, wall.Round(time.Millisecond))
	case len(failed) > 0:
		fmt.Fprintf(p.stdout, "\nFAILED: %d of %s (%s)%s, in %s of wall time%s\n", len(failed), plural(len(outcomes), "seed"),
			seedList(failed), knownNote, wall.Round(time.Millisecond), rate)
	case len(known) > 0:
		fmt.Fprintf(p.stdout, "\nKNOWN UPSTREAM: %s: %d passed, 0 failed, %d known-upstream (%s: %s; not failures), in %s of wall time%s\n",
			plural(len(outcomes), "seed"), len(outcomes)-len(known), len(known), seedList(known), strings.Join(upstreamBugs(outcomes), ", "),
			wall.Round(time.Millisecond), rate)
	default:
		fmt.Fprintf(p.stdout, "\nPASSED: %s, in %s of wall time%s\n", plural(len(outcomes), "seed"), wall.Round(time.Millisecond), rate)
	}
}

// knownSeeds are the seeds whose only violations a known upstream bug
// caused (seedResult.known).
func knownSeeds(outcomes []seedResult) []uint64 {
	var known []uint64
	for _, r := range outcomes {
		if r.known() {
			known = append(known, r.Seed)
		}
	}
	return known
}

// upstreamBugs are the known upstream bugs the known-upstream seeds name
// ("kubernetes#121937"), sorted.
func upstreamBugs(outcomes []seedResult) []string {
	var lines []string
	for _, r := range outcomes {
		if r.known() {
			lines = append(lines, r.KnownUpstream...)
		}
	}
	return knownBugs(lines)
}

// knownBugs are the bugs KNOWN lines name, sorted, each once.
func knownBugs(lines []string) []string {
	var bugs []string
	for _, line := range lines {
		bug, _, _ := strings.Cut(strings.TrimPrefix(line, "KNOWN  "), ":")
		bugs = append(bugs, bug)
	}
	return slices.Compact(slices.Sorted(slices.Values(bugs)))
}

// failedSeeds are the seeds whose runs failed (not those interrupted).
func failedSeeds(outcomes []seedResult) []uint64 {
	var failed []uint64
	for _, r := range outcomes {
		if !r.Interrupted && r.Failure != nil {
			failed = append(failed, r.Seed)
		}
	}
	return failed
}

// seedList is "3, 17, 40", or the first ten and how many more.
func seedList(seeds []uint64) string {
	const shown = 10
	var words []string
	for i, s := range seeds {
		if i == shown {
			words = append(words, fmt.Sprintf("and %d more", len(seeds)-shown))
			break
		}
		words = append(words, strconv.FormatUint(s, 10))
	}
	return "seed " + strings.Join(words, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// seedFlags are the flags the user set that change how a seed runs (the
// driver, a nemesis…), as command-line words: what the replay command of
// a seed and the run of each seed of a sweep repeat. Flags that pick the
// seeds or say where output goes are left out.
func seedFlags(fs *flag.FlagSet) []string {
	var words []string
	fs.Visit(func(f *flag.Flag) {
		if leftOutOfReplay(f.Name) {
			return
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if f.Value.String() == "true" {
				words = append(words, "--"+f.Name)
			} else {
				words = append(words, "--"+f.Name+"="+f.Value.String())
			}
			return
		}
		words = append(words, "--"+f.Name, f.Value.String())
	})
	return words
}

// replayCommand returns the command line that runs one seed alone, the
// way the sweep ran it: `csisim run --seed N`, the flags and the file.
func replayCommand(flags []string, file string) func(seed uint64) string {
	quoted := make([]string, 0, len(flags)+1)
	for _, w := range flags {
		quoted = append(quoted, shellQuote(w))
	}
	quoted = append(quoted, shellQuote(file))
	return func(seed uint64) string {
		return "csisim run --seed " + strconv.FormatUint(seed, 10) + " " + strings.Join(quoted, " ")
	}
}

// childArgs returns the command line of the run of one seed of a sweep:
// the replay command's flags, quiet, with the seed's own trace and driver
// log files if asked for.
func childArgs(flags []string, traceFile, driverLog string) func(seed uint64) []string {
	return func(seed uint64) []string {
		args := append([]string{"run", "--seed", strconv.FormatUint(seed, 10), "--quiet"}, flags...)
		if traceFile != "" {
			args = append(args, "--trace", withSeed(traceFile, seed))
		}
		if driverLog != "" {
			args = append(args, "--driver-log", withSeed(driverLog, seed))
		}
		return args
	}
}

// leftOutOfReplay names the flags of run that a replay of one seed does
// without: which seeds, how many at once, and where output goes.
func leftOutOfReplay(name string) bool {
	switch name {
	case "seed", "seeds", "shard", "parallel", "junit", "quiet", "trace", "driver-log", "cpuprofile", "memprofile", "json-result":
		return true
	}
	return false
}

// shellQuote quotes s for a POSIX shell if it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, needsQuoting) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func needsQuoting(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./=:,@%+", r)
}

// perSeedFileFlags are the flags that name a file each seed of a sweep
// writes for itself, so their names must hold the seed's placeholder.
var perSeedFileFlags = []string{"trace", "driver-log", "shrink-out"}

// sweepFlags checks the flags of a sweep against each other and returns
// the seeds of --seeds (nil without it) and the shard to run.
func sweepFlags(fs *flag.FlagSet, seeds, shardSpec, backend string, parallel int) ([]uint64, shard, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["seeds"] {
		for _, name := range []string{"parallel", "shard"} {
			if set[name] {
				return nil, shard{}, fmt.Errorf("--%s is for a sweep of seeds: add --seeds", name)
			}
		}
		return nil, wholeSweep, nil
	}
	switch {
	case set["seed"]:
		return nil, shard{}, fmt.Errorf("--seed and --seeds: give one or the other (--seeds N runs seed N alone)")
	case backend != "sim":
		return nil, shard{}, fmt.Errorf("--seeds is for the simulator: --backend %s runs on wall time and ignores seeds", backend)
	case parallel < 1:
		return nil, shard{}, fmt.Errorf("--parallel %d: at least one seed must run at a time", parallel)
	}
	for _, name := range perSeedFileFlags {
		f := fs.Lookup(name)
		if f == nil {
			continue // not a flag of this command
		}
		if file := f.Value.String(); file != "" && !strings.Contains(file, seedPlaceholder) {
			return nil, shard{}, fmt.Errorf("--%s %s: with --seeds, put %s in the file name (e.g. %s-%s.txt), so that each seed writes a file of its own",
				name, file, seedPlaceholder, name, seedPlaceholder)
		}
	}
	list, err := parseSeeds(seeds)
	if err != nil {
		return nil, shard{}, err
	}
	part := wholeSweep
	if set["shard"] {
		if part, err = parseShard(shardSpec); err != nil {
			return nil, shard{}, err
		}
	}
	return list, part, nil
}
