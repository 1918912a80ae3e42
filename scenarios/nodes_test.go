package scenarios

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

func TestRenameNodes(t *testing.T) {
	names := map[string]string{"node-1": "kind-worker", "node-2": "kind-worker2"}
	tests := []struct{ in, want string }{
		{"node-1", "kind-worker"},
		{"node/node-2", "node/kind-worker2"},
		{`MountVolume.NodeExpandVolume succeeded for volume "pv" node-1`, `MountVolume.NodeExpandVolume succeeded for volume "pv" kind-worker`},
		{"[node-1, node-2]", "[kind-worker, kind-worker2]"},
		// Longer names that hold a node's name are other names.
		{"node-1-small", "node-1-small"},
		{"node-10", "node-10"},
		{"my-node-1", "my-node-1"},
		{"node_1", "node_1"},
		{"node-3", "node-3"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := renameNodes(tt.in, names); got != tt.want {
			t.Errorf("renameNodes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := renameNodes("node-1", nil); got != "node-1" {
		t.Errorf("no names: %q", got)
	}
}

// fakeWorkers is a backend whose nodes are named otherwise than the
// scenarios name them.
type fakeWorkers struct {
	fakeBackend
	workers []Worker
}

func (b fakeWorkers) Workers(context.Context) ([]Worker, error) { return b.workers, nil }

func TestRunNamesNodesAsTheBackend(t *testing.T) {
	s := mustParse(t, `cluster:
  nodes: [node-1, node-2]
  zones: {node-2: zone-b}
steps:
  - name: a pod on node-2
    apply:
      manifest: |
        {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {nodeName: node-2, nodeSelector: {kubernetes.io/hostname: node-2}}}
  - assert: {object: pod/p, jsonPath: '{.spec.nodeName}', equals: node-2}
`)
	cluster := newFakeCluster(clock.RealClock{})
	backend := fakeWorkers{workers: []Worker{{Name: "c-worker", Zone: "zone-a"}, {Name: "c-worker2", Zone: "zone-b"}, {Name: "c-worker3"}}}
	res, err := (&Runner{Backend: backend, Namespace: "default"}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed() {
		t.Fatalf("not passed: %+v", res.Steps)
	}
	if res.Steps[0].Name != "a pod on c-worker2" {
		t.Errorf("step name %q, want the backend's node in it", res.Steps[0].Name)
	}
	pod, err := cluster.client.Resource(podsGVR).Namespace("default").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Object["spec"].(map[string]any)["nodeName"]; got != "c-worker2" {
		t.Errorf("pod's nodeName %v, want c-worker2", got)
	}
}

func TestRunSkipsWhatTheBackendsNodesCannotBe(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
		workers []Worker
		want    string
	}{
		{"too few", "{nodes: [node-1, node-2, node-3]}", []Worker{{Name: "w1"}, {Name: "w2"}},
			"needs 3 worker nodes (node-1, node-2, node-3); the cluster has 2 (w1, w2)"},
		{"no worker", "{}", nil, "needs 1 worker nodes (node-1); the cluster has 0 ()"},
		{"zone", "{nodes: [node-1, node-2], zones: {node-2: zone-c}}", []Worker{{Name: "w1", Zone: "zone-a"}, {Name: "w2", Zone: "zone-b"}},
			`needs node-2 in zone zone-c; the cluster's worker 2, w2, is in zone "zone-b"`},
		{"SELinux", "{nodes: [node-1, node-2], seLinux: [node-2]}", []Worker{{Name: "w1"}, {Name: "w2"}},
			"needs SELinux enabled on node-2 (cluster.seLinux); csisim cannot make the cluster's workers so"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, "cluster: "+tt.cluster+"\nsteps:\n  - assert: {object: node/node-1}\n")
			cluster := newFakeCluster(clock.RealClock{})
			res, err := (&Runner{Backend: fakeWorkers{workers: tt.workers}}).run(context.Background(), s, cluster.objects)
			if err != nil {
				t.Fatal(err)
			}
			if res.Skipped != tt.want {
				t.Errorf("Skipped = %q, want %q", res.Skipped, tt.want)
			}
			if n := len(cluster.client.Actions()); n != 0 {
				t.Errorf("%d API calls for a skipped scenario", n)
			}
		})
	}
}

// A fault the backend cannot inject skips the scenario: the steps after
// it would wait for its effect.
func TestRunSkipUnsupportedFaultSkipsTheScenario(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - name: the node goes
    nodeLoss: {node: node-1}
  - wait: {object: node/node-1, jsonPath: '{.status.conditions[?(@.type=="Ready")].status}', equals: Unknown}
`)
	cluster := newFakeCluster(clock.RealClock{})
	res, err := (&Runner{Backend: fakeBackend{}, SkipUnsupported: true}).run(context.Background(), s, cluster.objects)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Skipped, "step 2 (the node goes) at ") || !strings.Contains(res.Skipped, "node-loss needs a backend that can inject faults") {
		t.Errorf("Skipped = %q, want step 2 and why", res.Skipped)
	}
	for _, st := range res.Steps {
		if st.Outcome != Skipped {
			t.Errorf("step %d outcome %s, want skipped", st.Step, st.Outcome)
		}
	}
	if n := len(cluster.client.Actions()); n != 0 {
		t.Errorf("%d API calls for a skipped scenario", n)
	}
}
