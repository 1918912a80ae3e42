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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
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
			before, err := clusterState(backend)
			Expect(err).NotTo(HaveOccurred())
			sc, err := scenarios.Load(file)
			Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			runner := &scenarios.Runner{Backend: backend, Profile: deployed, Out: GinkgoWriter, SkipUnsupported: true, Restore: true}
			res, err := runner.Run(ctx, sc)
			report.add(name, outcomeOf(res, err))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Failed()).To(BeFalse())
			if left := leftBehind(before); len(left) > 0 {
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

// leftBehindTimeout bounds the wait for what a scenario made to go once
// it ended: its claims' volumes are deleted after the claims.
const leftBehindTimeout = 3 * time.Minute

// leftBehind is how the cluster differs from before, once what the
// scenario made had leftBehindTimeout to go; nil when it does not.
func leftBehind(before []string) []string {
	deadline := time.Now().Add(leftBehindTimeout)
	for {
		after, err := clusterState(backend)
		if err != nil {
			return []string{err.Error()}
		}
		d := diffState(before, after)
		if len(d) == 0 || time.Now().After(deadline) {
			return d
		}
		time.Sleep(2 * time.Second)
	}
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

// stateKinds are the cluster-scoped objects a scenario may make and must
// remove: what is left of them outlives its namespace.
var stateKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "nodes"},
	{Version: "v1", Resource: "persistentvolumes"},
	{Version: "v1", Resource: "namespaces"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
	{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"},
	{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"},
}

// clusterState is one line per cluster-scoped object of stateKinds: its
// kind and name, and for a node its taints and whether it is cordoned
// (what a scenario changes on the nodes it borrows).
func clusterState(b scenarios.Backend) ([]string, error) {
	client, err := dynamic.NewForConfig(b.RESTConfig())
	if err != nil {
		return nil, err
	}
	var state []string
	for _, gvr := range stateKinds {
		list, err := client.Resource(gvr).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for _, o := range list.Items {
			line := gvr.Resource + "/" + o.GetName()
			if gvr.Resource == "nodes" {
				spec, _ := o.Object["spec"].(map[string]any)
				line += fmt.Sprintf(" taints=%v unschedulable=%v", spec["taints"], spec["unschedulable"])
			}
			state = append(state, line)
		}
	}
	sort.Strings(state)
	return state, nil
}

// diffState lists what after has that before had not (+) and the reverse
// (-).
func diffState(before, after []string) []string {
	var d []string
	for _, a := range after {
		if !slices.Contains(before, a) {
			d = append(d, "+ "+a)
		}
	}
	for _, b := range before {
		if !slices.Contains(after, b) {
			d = append(d, "- "+b)
		}
	}
	return d
}
