package scenarios

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
)

// On a shared cluster with more workers than the scenario has nodes, its
// pods run on its nodes' workers: a one-node scenario's on the first.
func TestRunConfinesPodsToTheScenariosNodes(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        {apiVersion: v1, kind: Pod, metadata: {name: free}, spec: {containers: [{name: c, image: busybox}]}}
        ---
        {apiVersion: v1, kind: Pod, metadata: {name: named}, spec: {nodeName: elsewhere, containers: [{name: c, image: busybox}]}}
`)
	backend := fakeWorkers{workers: []Worker{{Name: "c-worker"}, {Name: "c-worker2"}}}
	for _, restore := range []bool{false, true} {
		cluster := newFakeCluster(clock.RealClock{})
		ctx := context.Background()
		if _, err := (&Runner{Backend: backend, Namespace: "default", Restore: restore}).run(ctx, s, cluster.objects); err != nil {
			t.Fatal(err)
		}
		free, err := cluster.client.Resource(podsGVR).Namespace("default").Get(ctx, "free", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := unstructured.NestedString(free.Object, "spec", "nodeSelector", hostnameLabel)
		named, err := cluster.client.Resource(podsGVR).Namespace("default").Get(ctx, "named", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, namedHasSelector, _ := unstructured.NestedMap(named.Object, "spec", "nodeSelector")
		switch {
		case restore && host != "c-worker":
			t.Errorf("shared cluster: the free pod's host is %q, want c-worker", host)
		case !restore && host != "":
			t.Errorf("a cluster of the run's own: the free pod was given host %q", host)
		case namedHasSelector:
			t.Error("a pod that names its node was given a selector")
		}
	}
}

func TestConfinePodsAffinityForSeveralHosts(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"kind": "Deployment", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "Exists"}}}}}}}}}}}}
	if err := confinePods(obj, []string{"w1", "w2"}); err != nil {
		t.Fatal(err)
	}
	terms, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	exprs, _ := terms[0].(map[string]any)["matchExpressions"].([]any)
	if len(terms) != 1 || len(exprs) != 2 || exprs[1].(map[string]any)["key"] != hostnameLabel {
		t.Errorf("terms: %v", terms)
	}
}
