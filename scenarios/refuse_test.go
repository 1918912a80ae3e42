package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/unmodelled"
)

// fakeRefuser is a backend that refuses what the simulator does not
// model, as sim/cluster does.
type fakeRefuser struct{ fakeBackend }

func (fakeRefuser) RefuseManifest(obj map[string]any) field.ErrorList {
	return unmodelled.Errors(obj, nil)
}

const refusedScenario = `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers:
            - name: app
              image: busybox
              lifecycle:
                preStop: {exec: {command: [sleep, "5"]}}
  - apply: {file: manifests/ds.yaml}
`

// TestRunRefusesWhatTheBackendDoesNotModel: a backend that refuses fields
// has the scenario refused before anything runs, each field at its line
// — in the scenario for an inline manifest, in the manifest file for a
// file's — as load errors; a backend that does not (the real control
// plane) runs it.
func TestRunRefusesWhatTheBackendDoesNotModel(t *testing.T) {
	s, err := parseWithFiles(t, refusedScenario, map[string]string{"manifests/ds.yaml": `# the driver's node plugin
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-plugin}
`})
	if err != nil {
		t.Fatal(err)
	}
	cluster := newFakeCluster(clock.RealClock{})
	_, err = (&Runner{Backend: fakeRefuser{}}).run(context.Background(), s, cluster.objects)
	var perrs ParseErrors
	if !errors.As(err, &perrs) || len(perrs) != 2 {
		t.Fatalf("error %v, want two load errors", err)
	}
	// The manifest file's path is the scenario directory's.
	want := []string{
		"x.yaml:16: step 2 (apply): Pod/app: csisim does not model spec.containers[0].lifecycle (it would change ",
		"/manifests/ds.yaml:3: step 3 (apply): DaemonSet/node-plugin: csisim does not model kind DaemonSet (it would change ",
	}
	for i, w := range want {
		if got := perrs[i].Error(); !strings.Contains(got, w) || !strings.HasSuffix(got, "; use --backend realkube"+map[bool]string{true: " --real-nodes"}[i == 0]) {
			t.Errorf("error %d:\n%s\nwant it to hold\n%s", i+1, got, w)
		}
	}
	if n := len(cluster.client.Actions()); n != 0 {
		t.Errorf("%d API calls were made before refusing the scenario", n)
	}

	cluster = newFakeCluster(clock.RealClock{})
	_, err = (&Runner{Backend: fakeBackend{}}).run(context.Background(), s, cluster.objects)
	if errors.As(err, &perrs) {
		t.Errorf("a backend that refuses nothing: %v", err)
	}
	if len(cluster.client.Actions()) == 0 {
		t.Error("a backend that refuses nothing: the scenario did not run")
	}
}

func TestFieldLine(t *testing.T) {
	objects, errs := readManifests(`apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
    - name: a
    - name: b
      ports:
        - containerPort: 80
          hostPort: 80
`, "m.yaml", 10)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m := objects[0]
	for path, want := range map[string]int{
		"kind":                                 11,
		"spec":                                 13,
		"spec.containers[1]":                   16,
		"spec.containers[1].ports[0].hostPort": 19,
		"spec.containers[1].lifecycle":         16, // not there: the deepest part that is
		"spec.containers[5].name":              14,
	} {
		if got := m.FieldLine(path); got != want {
			t.Errorf("FieldLine(%s) = %d, want %d", path, got, want)
		}
	}
}
