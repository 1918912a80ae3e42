// Command sweepcheck judges a seed sweep run as an Indexed Job
// (deploy/seed-sweep/indexed-job.yaml), from the JUnit reports its shards
// wrote (csisim run --seeds ... --shard i/n --junit ...), which
// e2e/kind/run.sh collects from the kind nodes:
//
//	go run ./e2e/kind/sweepcheck --seeds 1..400 --out merged.xml \
//	    [--expect-fail 7] [--map /in/image=local ...] [--replay bin/csisim] SHARD.xml ...
//
// It checks that the shards together ran every seed of --seeds exactly
// once, writes the merged report (one test suite per shard), and prints
// each failing seed with its shard and the command that replays it on
// this machine: the shard's replay command with the paths of the image
// mapped to the repository's (--map). With --replay it runs each of those
// commands with that csisim binary and checks that it fails the same way.
// --expect-fail names the seeds that must fail (a seeded failure); any
// other failing seed, or an expected one that passed, fails the check.
//
// Exit status: 0 when everything holds, 1 when not, 2 on bad usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// config is the command line.
type config struct {
	seeds      []uint64
	out        string
	expectFail []uint64
	maps       [][2]string
	replayBin  string
	shards     []string
}

func parse(args []string) (config, error) {
	fs := flag.NewFlagSet("sweepcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c config
	var seeds, expect string
	var maps list
	fs.StringVar(&seeds, "seeds", "", "the sweep's seeds, FIRST..LAST")
	fs.StringVar(&c.out, "out", "", "write the merged JUnit report here")
	fs.StringVar(&expect, "expect-fail", "", "the seeds that must fail, comma-separated")
	fs.Var(&maps, "map", "/path/in/image=local/path, for replay commands (repeatable)")
	fs.StringVar(&c.replayBin, "replay", "", "run each failing seed's replay command with this csisim")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.shards = fs.Args()
	if len(c.shards) == 0 {
		return c, errors.New("no shard reports given")
	}
	first, last, ok := strings.Cut(seeds, "..")
	a, err1 := strconv.ParseUint(first, 10, 64)
	b, err2 := strconv.ParseUint(last, 10, 64)
	if !ok || err1 != nil || err2 != nil || a > b {
		return c, fmt.Errorf("--seeds %q: want FIRST..LAST", seeds)
	}
	for s := a; s <= b; s++ {
		c.seeds = append(c.seeds, s)
	}
	for _, f := range strings.Split(expect, ",") {
		if f == "" {
			continue
		}
		s, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return c, fmt.Errorf("--expect-fail %q: %w", expect, err)
		}
		c.expectFail = append(c.expectFail, s)
	}
	for _, m := range maps {
		from, to, ok := strings.Cut(m, "=")
		if !ok || from == "" || to == "" {
			return c, fmt.Errorf("--map %q: want /path/in/image=local/path", m)
		}
		c.maps = append(c.maps, [2]string{from, to})
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "sweepcheck: %v\n", err)
		return 2
	}
	var suites []suite
	for _, f := range c.shards {
		s, err := readReport(f)
		if err != nil {
			fmt.Fprintf(stderr, "sweepcheck: %v\n", err)
			return 1
		}
		suites = append(suites, s...)
	}
	res := judge(c, suites)
	for _, line := range res.lines {
		fmt.Fprintln(stdout, line)
	}
	if c.out != "" {
		if err := writeMerged(c.out, suites); err != nil {
			fmt.Fprintf(stderr, "sweepcheck: %v\n", err)
			return 1
		}
	}
	ok := len(res.problems) == 0
	if ok && c.replayBin != "" {
		for _, f := range res.failures {
			if err := replay(c.replayBin, f, stdout); err != nil {
				res.problems = append(res.problems, err.Error())
			}
		}
		ok = len(res.problems) == 0
	}
	for _, p := range res.problems {
		fmt.Fprintf(stdout, "sweepcheck: FAIL: %s\n", p)
	}
	if !ok {
		return 1
	}
	fmt.Fprintf(stdout, "sweepcheck: the %d shards ran seeds %d..%d once each; failures as expected: %v\n",
		len(c.shards), c.seeds[0], c.seeds[len(c.seeds)-1], c.expectFail)
	return 0
}

// failure is a failing seed with where it ran and how to replay it here.
type failure struct {
	seed    uint64
	shard   string
	message string
	replay  string // mapped to this machine's paths
}

type verdict struct {
	lines    []string
	problems []string
	failures []failure
}

// judge checks the shards' test cases against the seeds and the expected
// failures.
func judge(c config, suites []suite) verdict {
	var v verdict
	ran := map[uint64]string{}
	for _, s := range suites {
		v.lines = append(v.lines, fmt.Sprintf("%s: %d seeds, %d failed", s.Name, len(s.Cases), s.Failures))
		for _, tc := range s.Cases {
			seed, err := strconv.ParseUint(strings.TrimPrefix(tc.Name, "seed "), 10, 64)
			if err != nil {
				v.problems = append(v.problems, fmt.Sprintf("shard %s: test case %q names no seed", s.Name, tc.Name))
				continue
			}
			if prev, dup := ran[seed]; dup {
				v.problems = append(v.problems, fmt.Sprintf("seed %d ran twice, in %s and %s", seed, prev, s.Name))
			}
			ran[seed] = s.Name
			if tc.Failure == nil {
				continue
			}
			f := failure{seed: seed, shard: s.Name, message: mapPaths(tc.Failure.Message, c.maps), replay: mapPaths(replayLine(tc.Failure.Body), c.maps)}
			v.failures = append(v.failures, f)
			v.lines = append(v.lines, fmt.Sprintf("seed %d FAILED in %s: %s\n    replay here: %s", seed, s.Name, f.message, f.replay))
			if !slices.Contains(c.expectFail, seed) {
				v.problems = append(v.problems, fmt.Sprintf("seed %d failed, and no failure was seeded there", seed))
			}
		}
	}
	var notRun []string
	for _, s := range c.seeds {
		if _, ok := ran[s]; !ok {
			notRun = append(notRun, strconv.FormatUint(s, 10))
		}
	}
	if len(notRun) > 0 {
		v.problems = append(v.problems, fmt.Sprintf("%d seeds of the range ran in no shard: %s", len(notRun), strings.Join(notRun, " ")))
	}
	for s := range ran {
		if !slices.Contains(c.seeds, s) {
			v.problems = append(v.problems, fmt.Sprintf("seed %d ran, outside the range", s))
		}
	}
	for _, s := range c.expectFail {
		if !slices.ContainsFunc(v.failures, func(f failure) bool { return f.seed == s }) {
			v.problems = append(v.problems, fmt.Sprintf("seed %d was to fail (a seeded failure) and did not", s))
		}
	}
	return v
}

// replayLine is the "replay: ..." command of a failure's text.
func replayLine(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "replay: "); ok {
			return r
		}
	}
	return ""
}

func mapPaths(cmd string, maps [][2]string) string {
	for _, m := range maps {
		cmd = strings.ReplaceAll(cmd, m[0], m[1])
	}
	return cmd
}

// replay runs f's replay command with the csisim at bin and checks that it
// fails with f's message.
func replay(bin string, f failure, stdout io.Writer) error {
	words := strings.Fields(f.replay)
	if len(words) < 2 || words[0] != "csisim" || strings.ContainsAny(f.replay, `'"\`) {
		return fmt.Errorf("seed %d: cannot run the replay command %q", f.seed, f.replay)
	}
	fmt.Fprintf(stdout, "sweepcheck: replaying seed %d here: %s %s\n", f.seed, bin, strings.Join(words[1:], " "))
	out, err := exec.Command(bin, words[1:]...).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		return fmt.Errorf("seed %d: the replay here ended with %v, want exit 1 (a failed run):\n%s", f.seed, err, out)
	}
	if !strings.Contains(string(out), f.message) {
		return fmt.Errorf("seed %d: the replay here failed otherwise than in %s (want %q):\n%s", f.seed, f.shard, f.message, out)
	}
	fmt.Fprintf(stdout, "sweepcheck: seed %d fails here as in %s: %s\n", f.seed, f.shard, f.message)
	return nil
}
