package nemesis

import (
	"cmp"
	"slices"
)

// Minimize returns a subset of items, in their order, for which fails
// still holds, such that removing any one more item makes it not hold
// (1-minimal): Zeller's delta debugging (ddmin), which first tries to drop
// large chunks and then ever smaller ones. fails(items) should hold; each
// call of fails is one run of the scenario, so the calls are few: O(n²) in
// the worst case, about 2·k·log n for k items that matter.
func Minimize[T any](items []T, fails func([]T) bool) []T {
	current := slices.Clone(items)
	n := 2
	for len(current) >= 2 {
		chunks := split(current, n)
		reduced := false
		// A single chunk that fails alone is the biggest step down.
		for _, c := range chunks {
			if fails(c) {
				current, n, reduced = c, 2, true
				break
			}
		}
		if !reduced {
			// Otherwise drop one chunk, keeping the rest.
			for i := range chunks {
				rest := complement(chunks, i)
				if fails(rest) {
					current, n, reduced = rest, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(current) {
				break
			}
			n = min(2*n, len(current))
		}
	}
	return current
}

// split cuts items into n chunks of nearly equal length, in order.
func split[T any](items []T, n int) [][]T {
	out := make([][]T, 0, n)
	start := 0
	for i := range n {
		end := start + (len(items)-start)/(n-i)
		out = append(out, items[start:end:end])
		start = end
	}
	return out
}

// complement concatenates every chunk but the i-th.
func complement[T any](chunks [][]T, i int) []T {
	var out []T
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}

// shiftTries is how many times ShiftEarlier halves one event's time.
const shiftTries = 3

// ShiftEarlier moves each event of events as early as it can while fails
// still holds, by halving its time (and keeping its recovery as long
// after it) up to shiftTries times: an earlier fault gives a shorter
// reproduction, and tells whether the moment it struck mattered. It is
// cheap: at most shiftTries calls of fails per event. The events it
// returns are in order of time.
func ShiftEarlier(events []Event, fails func([]Event) bool) []Event {
	current := slices.Clone(events)
	for i := range current {
		for range shiftTries {
			at := current[i].At / 2 / granularity * granularity
			if at == current[i].At {
				break
			}
			candidate := slices.Clone(current)
			candidate[i].At = at
			if !fails(candidate) {
				break
			}
			current = candidate
		}
	}
	slices.SortStableFunc(current, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	return current
}
