package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// seedsUsage is the help text of --seeds.
const seedsUsage = "run the scenario once per seed, each on a cluster of its own, and print one line per seed\n" +
	"instead of the timeline: a range A..B (both included), a single seed, or a comma list of both, e.g. 1..20,77"

// parseSeeds reads the value of --seeds: ranges A..B (both ends included),
// single seeds and comma lists of both. The seeds come back in ascending
// order, so that a sweep's output and its shards depend only on the set
// of seeds, not on how it was written; a seed given twice is a mistake.
func parseSeeds(spec string) ([]uint64, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("--seeds: no seeds given (write A..B, a single seed, or a comma list)")
	}
	var seeds []uint64
	for _, part := range strings.Split(spec, ",") {
		more, err := parseSeedTerm(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--seeds %s: %w", spec, err)
		}
		seeds = append(seeds, more...)
	}
	slices.Sort(seeds)
	for i := 1; i < len(seeds); i++ {
		if seeds[i] == seeds[i-1] {
			return nil, fmt.Errorf("--seeds %s: seed %d is given more than once", spec, seeds[i])
		}
	}
	return seeds, nil
}

// maxSweep bounds how many seeds one --seeds value may name: a range
// written by mistake (1..1e18) should be an error, not an endless run.
const maxSweep = 1_000_000

// parseSeedTerm reads one comma-separated term of --seeds: "A..B" or "A".
func parseSeedTerm(term string) ([]uint64, error) {
	from, to, isRange := strings.Cut(term, "..")
	if !isRange {
		seed, err := parseSeed(term)
		if err != nil {
			return nil, err
		}
		return []uint64{seed}, nil
	}
	if from == "" || to == "" {
		return nil, fmt.Errorf("range %q lacks an end: write A..B, both ends included", term)
	}
	first, err := parseSeed(from)
	if err != nil {
		return nil, err
	}
	last, err := parseSeed(to)
	if err != nil {
		return nil, err
	}
	if last < first {
		return nil, fmt.Errorf("range %s ends before it starts (%d > %d)", term, first, last)
	}
	if last-first >= maxSweep {
		return nil, fmt.Errorf("range %s has %d seeds or more; at most %d in one sweep", term, uint64(maxSweep), maxSweep)
	}
	seeds := make([]uint64, 0, last-first+1)
	for s := first; ; s++ {
		seeds = append(seeds, s)
		if s == last { // not s <= last: last may be the largest uint64
			return seeds, nil
		}
	}
}

func parseSeed(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("an empty seed (two commas, or one at an end?)")
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a seed: seeds are whole numbers from 0 to %d", s, uint64(math.MaxUint64))
	}
	return seed, nil
}

// shardUsage is the help text of --shard.
const shardUsage = "run only shard i of n of the seeds (0 <= i < n, 0-based like a Kubernetes Indexed Job's\n" +
	"JOB_COMPLETION_INDEX): the seeds at positions p (in ascending order) with p mod n == i;\n" +
	"the n shards are disjoint and together run every seed"

// shard is one of count parts of a sweep, 0-based: index 0 .. count-1.
type shard struct {
	index, count int
}

// wholeSweep is the shard that holds every seed.
var wholeSweep = shard{index: 0, count: 1}

// parseShard reads the value of --shard, "i/n".
func parseShard(spec string) (shard, error) {
	i, n, ok := strings.Cut(spec, "/")
	if !ok {
		return shard{}, fmt.Errorf("--shard %s: write i/n, e.g. 0/4 for the first of four shards", spec)
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 {
		return shard{}, fmt.Errorf("--shard %s: the number of shards %q is not a whole number of at least 1", spec, n)
	}
	index, err := strconv.Atoi(i)
	if err != nil || index < 0 || index >= count {
		return shard{}, fmt.Errorf("--shard %s: the shard %q is not a whole number from 0 to %d (shards count from 0)", spec, i, count-1)
	}
	return shard{index: index, count: count}, nil
}

// pick returns the seeds of this shard: those at the positions p with
// p mod count == index. Taking every count-th seed, rather than a block,
// spreads slow seeds (if slowness runs in neighbouring seeds) over the
// shards.
func (s shard) pick(seeds []uint64) []uint64 {
	var mine []uint64
	for p, seed := range seeds {
		if p%s.count == s.index {
			mine = append(mine, seed)
		}
	}
	return mine
}

func (s shard) String() string { return fmt.Sprintf("%d/%d", s.index, s.count) }
