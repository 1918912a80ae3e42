package scenarios

import (
	"context"
	"fmt"
	"strings"
)

// NodeNamer is implemented by backends whose nodes are not named as a
// scenario names them. A scenario's cluster.nodes (default node-1, as the
// simulator's) are roles: the first worker, the second, ... On a kind
// cluster the workers are <cluster>-worker, <cluster>-worker2, so the
// runner gives the scenario's nodes, in order, the names of the backend's
// workers, wherever the scenario's steps name them (manifests, object
// references, expected values, fault steps). A scenario that needs more
// nodes than the backend has, or a node in a zone its worker is not in,
// is skipped, saying so.
type NodeNamer interface {
	// Workers are the nodes a scenario's pods may run on, in the order
	// the scenario's nodes are given them.
	Workers(ctx context.Context) ([]Worker, error)
}

// Worker is a node of a NodeNamer backend.
type Worker struct {
	Name string
	Zone string // its topology.kubernetes.io/zone label; "" for none
}

// defaultNodes are the nodes of a scenario that names none
// (sim/cluster's default).
var defaultNodes = []string{"node-1"}

// nodeNames maps the scenario's node names to the backend's, or says why
// the backend's nodes cannot stand for them; nil when the backend names
// its nodes as the scenario does.
func (r *Runner) nodeNames(ctx context.Context, s *Scenario) (names map[string]string, skip string, err error) {
	nn, ok := r.Backend.(NodeNamer)
	if !ok {
		return nil, "", nil
	}
	workers, err := nn.Workers(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("run scenario %s: list the backend's workers: %w", s.Name, err)
	}
	want := s.Cluster.Nodes
	if len(want) == 0 {
		want = defaultNodes
	}
	if len(want) > len(workers) {
		return nil, fmt.Sprintf("needs %d worker nodes (%s); the cluster has %d (%s)",
			len(want), strings.Join(want, ", "), len(workers), workerNames(workers)), nil
	}
	if len(s.Cluster.SELinux) > 0 {
		// Whether a worker's kernel has SELinux is the cluster's, and
		// csisim cannot set it.
		return nil, fmt.Sprintf("needs SELinux enabled on %s (cluster.seLinux); csisim cannot make the cluster's workers so",
			strings.Join(s.Cluster.SELinux, ", ")), nil
	}
	names = make(map[string]string, len(want))
	for i, n := range want {
		w := workers[i]
		if z := s.Cluster.Zones[n]; z != "" && z != w.Zone {
			return nil, fmt.Sprintf("needs %s in zone %s; the cluster's worker %d, %s, is in zone %q", n, z, i+1, w.Name, w.Zone), nil
		}
		names[n] = w.Name
	}
	return names, "", nil
}

func workerNames(ws []Worker) string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}

// renameNodes replaces each node name of names in s where it stands as a
// name of its own: not inside a longer name (node-1 in node-1-small or
// node-10 is left alone). Letters, digits, '-' and '_' make up a name.
func renameNodes(s string, names map[string]string) string {
	if len(names) == 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		word := s[i:j]
		if to, ok := names[word]; ok {
			word = to
		}
		b.WriteString(word)
		i = j
	}
	return b.String()
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// withNodes is st with its fault's node renamed as names says: what the
// backend is asked whether it can inject (the rest of the step is renamed
// when it runs, with its variables).
func withNodes(st Step, names map[string]string) *Step {
	if st.Fault != nil && len(names) > 0 {
		f := *st.Fault
		f.Node = renameNodes(f.Node, names)
		st.Fault = &f
	}
	return &st
}
