//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/scenarios"
)

// Workers are the cluster's nodes that are not control-plane nodes, by
// name (a kind cluster's <cluster>-worker, <cluster>-worker2, ...): the
// scenarios' node-1, node-2, ... (scenarios.NodeNamer).
func (b clusterBackend) Workers(ctx context.Context) ([]scenarios.Worker, error) {
	client, err := kubernetes.NewForConfig(b.cfg)
	if err != nil {
		return nil, err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "!node-role.kubernetes.io/control-plane"})
	if err != nil {
		return nil, err
	}
	var workers []scenarios.Worker
	for _, n := range nodes.Items {
		workers = append(workers, scenarios.Worker{Name: n.Name, Zone: n.Labels[corev1.LabelTopologyZone]})
	}
	sort.Slice(workers, func(i, j int) bool { return workers[i].Name < workers[j].Name })
	return workers, nil
}

var _ scenarios.NodeNamer = clusterBackend{}

// describeCluster runs the chosen scenarios on the cluster of -kubeconfig,
// one after another, each putting back what it changed outside its
// namespace (Runner.Restore), and fails a scenario that leaves the
// cluster changed all the same.
func describeCluster(files, chosen []string) {
	Describe("on the cluster", Ordered, ContinueOnFailure, func() { clusterSpecs(files, chosen) })
}

func clusterSpecs(files, chosen []string) {
	report := &outcomes{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		if chosen != nil && !slices.Contains(chosen, name) {
			continue
		}
		It("passes on the cluster: "+filepath.Base(file), func() {
			before, err := snapshotCluster(backend)
			Expect(err).NotTo(HaveOccurred())
			sc, err := scenarios.Load(file)
			Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithTimeout(context.Background(), specTimeout(sc))
			defer cancel()
			runner := &scenarios.Runner{Backend: backend, Profile: deployed, Out: GinkgoWriter, SkipUnsupported: true, Restore: true}
			res, err := runner.Run(ctx, sc)
			report.add(name, outcomeOf(res, err))
			// Whatever the outcome, what the scenario left is found and
			// taken away here, so that one failed spec does not fail the
			// specs after it on the shared cluster.
			left := leftBehind(before)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Failed()).To(BeFalse())
			if len(left) > 0 {
				report.add(name, "failed: left the cluster changed: "+strings.Join(left, "; "))
				Fail("the scenario left the cluster changed:\n" + strings.Join(left, "\n"))
			}
			if res.Skipped != "" {
				Skip(res.Skipped)
			}
		})
	}
	AfterAll(func() {
		if *kindReport != "" {
			Expect(report.write(*kindReport)).To(Succeed())
		}
	})
}

// outcomes are the scenarios' outcomes, for -kind-report.
type outcomes struct {
	mu   sync.Mutex
	rows [][2]string
}

func (o *outcomes) add(name, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.rows {
		if o.rows[i][0] == name {
			o.rows[i][1] = outcome
			return
		}
	}
	o.rows = append(o.rows, [2]string{name, outcome})
}

func (o *outcomes) write(file string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	b.WriteString("| scenario | outcome |\n|---|---|\n")
	for _, r := range o.rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], strings.ReplaceAll(r[1], "|", "\\|"))
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

func outcomeOf(res *scenarios.Result, err error) string {
	switch {
	case err != nil:
		return "failed: " + firstLine(err.Error())
	case res.Skipped != "":
		return "skipped: " + res.Skipped
	case res.Failed():
		for _, st := range res.Steps {
			if st.Outcome == scenarios.Failed {
				return fmt.Sprintf("failed at step %d (%s): %s", st.Step, st.Name, firstLine(st.Detail))
			}
		}
		return "failed"
	}
	return "passed"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
