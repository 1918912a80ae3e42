package main

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    []uint64
		wantErr string // a part of the error; "" if none
	}{
		{spec: "1..5", want: []uint64{1, 2, 3, 4, 5}},
		{spec: "7", want: []uint64{7}},
		{spec: "0", want: []uint64{0}},
		{spec: "3..3", want: []uint64{3}},
		{spec: "9,1..3, 20", want: []uint64{1, 2, 3, 9, 20}},
		{spec: "18446744073709551614..18446744073709551615", want: []uint64{1<<64 - 2, 1<<64 - 1}},
		{spec: "5..2", wantErr: "--seeds 5..2: range 5..2 ends before it starts (5 > 2)"},
		{spec: "x", wantErr: `--seeds x: "x" is not a seed: seeds are whole numbers`},
		{spec: "0..", wantErr: `--seeds 0..: range "0.." lacks an end: write A..B`},
		{spec: "..4", wantErr: `range "..4" lacks an end`},
		{spec: "-1", wantErr: `"-1" is not a seed`},
		{spec: "1..x", wantErr: `"x" is not a seed`},
		{spec: "1...3", wantErr: `".3" is not a seed`},
		{spec: "1,,2", wantErr: "an empty seed"},
		{spec: "", wantErr: "--seeds: no seeds given"},
		{spec: "1..3,2", wantErr: "seed 2 is given more than once"},
		{spec: "0..18446744073709551615", wantErr: "at most 1000000 in one sweep"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := parseSeeds(tc.spec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("parseSeeds(%q): %v", tc.spec, err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("parseSeeds(%q) = %v, want an error with %q", tc.spec, got, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("parseSeeds(%q): error %q, want it to contain %q", tc.spec, err, tc.wantErr)
			case !slices.Equal(got, tc.want):
				t.Fatalf("parseSeeds(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    shard
		wantErr string
	}{
		{spec: "0/4", want: shard{index: 0, count: 4}},
		{spec: "3/4", want: shard{index: 3, count: 4}},
		{spec: "0/1", want: wholeSweep},
		{spec: "4/4", wantErr: `the shard "4" is not a whole number from 0 to 3 (shards count from 0)`},
		{spec: "-1/4", wantErr: `the shard "-1"`},
		{spec: "1/0", wantErr: `the number of shards "0" is not a whole number of at least 1`},
		{spec: "2", wantErr: "write i/n"},
		{spec: "a/b", wantErr: `the number of shards "b"`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := parseShard(tc.spec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("parseShard(%q): %v", tc.spec, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("parseShard(%q) = %v, %v; want an error with %q", tc.spec, got, err, tc.wantErr)
			case got != tc.want:
				t.Fatalf("parseShard(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
}

// TestShardsPartitionTheSeeds: for any seeds and any number of shards,
// every seed is in exactly one shard, and the shards hold nothing else.
func TestShardsPartitionTheSeeds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lists := [][]uint64{nil, {5}, mustSeeds(t, "1..20"), mustSeeds(t, "0..99,500,1000..1002")}
	for range 20 {
		var random []uint64
		for s := range uint64(rng.IntN(60)) {
			random = append(random, s*7+uint64(rng.IntN(7)))
		}
		lists = append(lists, random)
	}
	for _, seeds := range lists {
		for count := 1; count <= 9; count++ {
			owner := map[uint64]int{}
			total := 0
			for index := range count {
				for _, s := range (shard{index: index, count: count}).pick(seeds) {
					if prev, dup := owner[s]; dup {
						t.Fatalf("%d shards of %v: seed %d in shard %d and in shard %d", count, seeds, s, prev, index)
					}
					owner[s] = index
					total++
				}
			}
			for _, s := range seeds {
				if _, ok := owner[s]; !ok {
					t.Fatalf("%d shards of %v: seed %d in no shard", count, seeds, s)
				}
			}
			if total != len(seeds) {
				t.Fatalf("%d shards of %v hold %d seeds, want %d", count, seeds, total, len(seeds))
			}
		}
	}
}

func mustSeeds(t *testing.T, spec string) []uint64 {
	t.Helper()
	seeds, err := parseSeeds(spec)
	if err != nil {
		t.Fatal(err)
	}
	return seeds
}

// TestRunSeedsReportsInSeedOrder: however many run at once and in whatever
// order they end, the outcomes are reported in seed order, each once.
func TestRunSeedsReportsInSeedOrder(t *testing.T) {
	seeds := mustSeeds(t, "1..30")
	for _, parallel := range []int{1, 2, 5, 40} {
		var running, most atomic.Int32
		run := func(_ context.Context, seed uint64) seedResult {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			// Later seeds end first, often.
			time.Sleep(time.Duration((seed*7919)%5) * time.Millisecond)
			return seedResult{Seed: seed}
		}
		var reported []uint64
		outcomes := runSeeds(context.Background(), seeds, parallel, run, func(r seedResult) { reported = append(reported, r.Seed) })
		if !slices.Equal(reported, seeds) {
			t.Fatalf("parallel %d: reported %v, want %v", parallel, reported, seeds)
		}
		if len(outcomes) != len(seeds) {
			t.Fatalf("parallel %d: %d outcomes, want %d", parallel, len(outcomes), len(seeds))
		}
		if m := int(most.Load()); m > parallel {
			t.Fatalf("parallel %d: %d seeds ran at once", parallel, m)
		}
	}
}

// TestRunSeedsStopsWhenInterrupted: after the context ends no seed starts,
// and the sweep returns the outcomes of those that did.
func TestRunSeedsStopsWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int32
	run := func(ctx context.Context, seed uint64) seedResult {
		if started.Add(1) == 3 {
			cancel()
		}
		return seedResult{Seed: seed, Interrupted: ctx.Err() != nil}
	}
	outcomes := runSeeds(ctx, mustSeeds(t, "1..100"), 2, run, func(seedResult) {})
	if n := int(started.Load()); n > 4 {
		t.Fatalf("%d seeds started; after the interrupt (at the third) at most the one beside it may", n)
	}
	if len(outcomes) != int(started.Load()) {
		t.Fatalf("%d outcomes of %d seeds started", len(outcomes), started.Load())
	}
}

func TestReplayCommand(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Uint64("seed", 1, "")
	fs.String("seeds", "", "")
	fs.Int("parallel", 1, "")
	fs.String("junit", "", "")
	fs.String("trace", "", "")
	fs.Bool("mock-driver", false, "")
	fs.Bool("quiet", false, "")
	fs.String("driver-command", "", "")
	fs.String("driver-name", "", "")
	err := fs.Parse([]string{"--seeds", "1..9", "--parallel", "2", "--junit", "r.xml", "--trace", "t-{seed}", "--quiet",
		"--driver-command", "/bin/drv --endpoint={endpoint} --x='y'", "--driver-name", "d.example.com", "--mock-driver"})
	if err != nil {
		t.Fatal(err)
	}
	flags := seedFlags(fs)
	got := replayCommand(flags, "my scenarios/s.yaml")(17)
	want := `csisim run --seed 17 --driver-command '/bin/drv --endpoint={endpoint} --x='\''y'\''' --driver-name d.example.com --mock-driver 'my scenarios/s.yaml'`
	if got != want {
		t.Fatalf("replay command\n got %s\nwant %s", got, want)
	}
	child := childArgs(flags, "t-{seed}.txt", "")(17)
	wantChild := []string{"run", "--seed", "17", "--quiet", "--driver-command", "/bin/drv --endpoint={endpoint} --x='y'",
		"--driver-name", "d.example.com", "--mock-driver", "--trace", "t-17.txt"}
	if !slices.Equal(child, wantChild) {
		t.Fatalf("a seed's run\n got %q\nwant %q", child, wantChild)
	}
}

func TestSeedListIsShort(t *testing.T) {
	var many []uint64
	for s := range uint64(25) {
		many = append(many, s)
	}
	for _, tc := range []struct {
		seeds []uint64
		want  string
	}{
		{[]uint64{4}, "seed 4"},
		{[]uint64{3, 17}, "seed 3, 17"},
		{many, "seed 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, and 15 more"},
	} {
		if got := seedList(tc.seeds); got != tc.want {
			t.Errorf("seedList(%v) = %q, want %q", tc.seeds, got, tc.want)
		}
	}
}
