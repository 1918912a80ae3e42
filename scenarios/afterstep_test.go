package scenarios

import (
	"context"
	"testing"

	"k8s.io/utils/clock"
)

func TestAfterStepSeesEveryStepThatRan(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        status: {phase: Pending}
  - assert: {object: pod/app, jsonPath: '{.status.phase}', equals: Running}
  - sleep: 1s
`)
	cluster := newFakeCluster(clock.RealClock{})
	var seen []StepResult
	r := &Runner{Backend: fakeBackend{}, AfterStep: func(_ context.Context, st StepResult) { seen = append(seen, st) }}
	if _, err := r.run(context.Background(), s, cluster.objects); err == nil {
		t.Fatal("the assert should fail")
	}
	if len(seen) != 2 {
		t.Fatalf("AfterStep saw %d steps, want 2 (the step after the failure does not run): %+v", len(seen), seen)
	}
	if seen[0].Step != 1 || seen[0].Outcome != Passed || seen[1].Step != 2 || seen[1].Outcome != Failed {
		t.Errorf("AfterStep saw %+v", seen)
	}
}
