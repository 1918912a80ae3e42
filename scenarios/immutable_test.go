package scenarios

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
)

func TestRunSkipsAChangeOfTheClustersCSIDriver(t *testing.T) {
	tests := []struct {
		name  string
		steps string
		want  string // the start of Result.Skipped; "" for a run
	}{
		{"attachRequired", `
  - name: no attach
    apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: d}, spec: {attachRequired: false, volumeLifecycleModes: [Persistent, Ephemeral]}}`,
			"step 1 (no attach) at x.yaml:2 applies CSIDriver d with spec.attachRequired false where the cluster's has true;"},
		{"defaulted modes", `
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: d}, spec: {attachRequired: true}}`,
			"step 1 (apply CSIDriver/d) at x.yaml:2 applies CSIDriver d with spec.volumeLifecycleModes [Persistent] where the cluster's has [Persistent Ephemeral];"},
		{"the same", `
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: d}, spec: {podInfoOnMount: false, volumeLifecycleModes: [Persistent, Ephemeral]}}`, ""},
		{"another name", `
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: other}, spec: {attachRequired: false}}`, ""},
		{"deleted first", `
  - delete: {object: csidriver/d}
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: d}, spec: {attachRequired: false}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, "steps:"+tt.steps+"\n")
			cluster := newFakeCluster(clock.RealClock{})
			deployed := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": map[string]any{"name": "d"},
				"spec": map[string]any{"attachRequired": true, "volumeLifecycleModes": []any{"Persistent", "Ephemeral"}},
			}}
			if _, err := cluster.client.Resource(csiDriversGVR).Create(context.Background(), deployed, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			res, err := (&Runner{Backend: fakeBackend{}, Namespace: "default"}).run(context.Background(), s, cluster.objects)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && res.Skipped != "":
				t.Errorf("skipped: %s", res.Skipped)
			case tt.want != "" && !strings.HasPrefix(res.Skipped, tt.want):
				t.Errorf("Skipped = %q, want it to begin %q", res.Skipped, tt.want)
			}
			if tt.want != "" {
				for _, a := range cluster.client.Actions() {
					if a.GetVerb() != "get" && a.GetVerb() != "create" {
						t.Errorf("a skipped scenario changed the cluster: %s", a.GetVerb())
					}
				}
				live, _ := cluster.client.Resource(csiDriversGVR).Get(context.Background(), "d", metav1.GetOptions{})
				if live.Object["spec"].(map[string]any)["attachRequired"] != true {
					t.Errorf("the cluster's CSIDriver was changed: %v", live.Object["spec"])
				}
			}
		})
	}
}
