// Package freeport picks loopback TCP ports for the processes csisim
// starts and that bind their ports themselves: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, real kubelets.
//
// A port the kernel hands out for 127.0.0.1:0 comes from its ephemeral
// range (/proc/sys/net/ipv4/ip_local_port_range), the same range every
// outgoing connection's local port and every other listener on port 0
// draws from. Between our releasing such a port and the process binding
// it, anything on a busy machine can take it, and the process fails with
// "bind: address already in use" (seen in CI: kube-apiserver on a port a
// test's connection had taken). The kernel hands out no port below that
// range on its own, so a port picked there at random and checked free can
// be taken only by a process that asks for it by number.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port picked: above the ports services usually
// listen on.
const lowest = 20000

// rangeFile holds the kernel's ephemeral port range, "low high".
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// Loopback returns n distinct ports that were free on 127.0.0.1 a moment
// ago, picked below the kernel's ephemeral range. Where that range leaves
// too few ports below it, it falls back to the kernel's choice.
func Loopback(n int) ([]int, error) {
	hi := ephemeralLow()
	if hi-lowest < 100*n {
		return kernelPorts(n)
	}
	return pick(n, lowest, hi, rand.IntN)
}

// pick reserves n distinct free ports in [lo, hi), trying them in the
// order intn draws them, and releases them together at the end.
func pick(n, lo, hi int, intn func(int) int) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	tried := map[int]bool{}
	var out []int
	for len(out) < n {
		if len(tried) == hi-lo {
			return nil, fmt.Errorf("only %d of the %d ports wanted are free in %d-%d on 127.0.0.1", len(out), n, lo, hi-1)
		}
		p := lo + intn(hi-lo)
		if tried[p] {
			continue
		}
		tried[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		held = append(held, l)
		out = append(out, p)
	}
	return out, nil
}

// ephemeralLow is the low end of the kernel's ephemeral port range, or
// Linux's default where it cannot be read.
func ephemeralLow() int {
	data, err := os.ReadFile(rangeFile)
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return low
}

// kernelPorts asks the kernel for n distinct ports (127.0.0.1:0), held
// together so that they differ.
func kernelPorts(n int) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		held = append(held, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
