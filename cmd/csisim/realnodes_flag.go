package main

import (
	"fmt"
	"slices"
	"strings"
)

// realNodesFlag is --real-nodes: given alone, every node of the scenario
// runs a real kubelet and containerd; given a comma-separated list, those
// nodes do and the others stay simulated.
type realNodesFlag struct {
	all   bool
	nodes []string
}

func (f *realNodesFlag) IsBoolFlag() bool { return true }

func (f *realNodesFlag) String() string {
	if f == nil || (!f.all && len(f.nodes) == 0) {
		return ""
	}
	if f.all {
		return "true"
	}
	return strings.Join(f.nodes, ",")
}

func (f *realNodesFlag) Set(v string) error {
	switch v {
	case "true":
		f.all, f.nodes = true, nil
	case "false", "":
		f.all, f.nodes = false, nil
	default:
		f.all, f.nodes = false, strings.Split(v, ",")
	}
	return nil
}

// set says whether real nodes were asked for.
func (f *realNodesFlag) set() bool { return f.all || len(f.nodes) > 0 }

// resolve is the list of real nodes among the scenario's nodes.
// A scenario that names no nodes runs on the backends' default node-1.
func (f *realNodesFlag) resolve(nodes []string) ([]string, error) {
	if len(nodes) == 0 && f.set() {
		nodes = []string{"node-1"}
	}
	if f.all {
		return slices.Clone(nodes), nil
	}
	for _, n := range f.nodes {
		if !slices.Contains(nodes, n) {
			return nil, fmt.Errorf("--real-nodes: the scenario has no node %q (its nodes: %s)", n, strings.Join(nodes, ", "))
		}
	}
	return f.nodes, nil
}

const realNodesUsage = "with --backend realkube (and in csisim diff): run the scenario's nodes as real kubelets v1.37.2 with containerd\n" +
	"(make realkube-bins; apt-get install containerd runc) instead of simulated ones; a comma-separated\n" +
	"list (--real-nodes=node-1) makes only those real"

// realNodesNote says which nodes are real, for the run's first line.
func realNodesNote(real []string) string {
	if len(real) == 0 {
		return ""
	}
	return ", real nodes " + strings.Join(real, ", ")
}
