package freeport

import (
	"net"
	"slices"
	"strconv"
	"testing"
)

// TestLoopbackBelowTheEphemeralRange: the ports are distinct, bindable, and
// below the range the kernel hands out for port 0 and outgoing connections.
func TestLoopbackBelowTheEphemeralRange(t *testing.T) {
	ports, err := Loopback(5)
	if err != nil {
		t.Fatal(err)
	}
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d twice in %v", p, ports)
		}
		seen[p] = true
		if low-lowest >= 500 && (p < lowest || p >= low) {
			t.Errorf("port %d outside %d-%d", p, lowest, low-1)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestPickSkipsTakenPorts: in a range of three ports with one held by
// another listener, the two others are picked, and asking for three fails.
func TestPickSkipsTakenPorts(t *testing.T) {
	lo := findFreeRun(t, 3)
	taken, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+1)))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	next := 0
	inOrder := func(n int) int { next++; return (next - 1) % n }
	got, err := pick(2, lo, lo+3, inOrder)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{lo, lo + 2}; !slices.Equal(got, want) {
		t.Errorf("picked %v, want %v (port %d is taken)", got, want, lo+1)
	}
	next = 0
	if got, err := pick(3, lo, lo+3, inOrder); err == nil {
		t.Errorf("picked %v of a range with one port taken, want an error", got)
	}
}

// findFreeRun finds n consecutive free ports from lowest up.
func findFreeRun(t *testing.T, n int) int {
	t.Helper()
	for lo := lowest; lo < lowest+1000; lo += n {
		free := true
		for p := lo; p < lo+n && free; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			return lo
		}
	}
	t.Fatal("no run of free ports")
	return 0
}
