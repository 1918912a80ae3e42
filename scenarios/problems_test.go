package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// troubledBackend saw a driver die on its own.
type troubledBackend struct{ fakeBackend }

func (troubledBackend) Problems() []string {
	return []string{"node plugin on node-1 exited with status 3 (pid 42)"}
}

func TestFailedStepNamesTheBackendsProblems(t *testing.T) {
	s := mustParse(t, "steps:\n  - wait: {object: pod/app, jsonPath: '{.status.phase}', equals: Running, timeout: 1s}\n")
	clk := testingclock.NewFakeClock(time.Now())
	r := &Runner{Backend: troubledBackend{}, Clock: clk}
	_, err := runOnFakeClock(t, context.Background(), r, clk, time.Second, s, newFakeCluster(clk).objects)
	var serr *StepError
	if !errors.As(err, &serr) {
		t.Fatalf("error %T %v, want *StepError", err, err)
	}
	if len(serr.Problems) != 1 || !strings.HasSuffix(err.Error(), "\n  meanwhile: node plugin on node-1 exited with status 3 (pid 42)") {
		t.Errorf("error = %q (problems %q), want the driver's exit named", err, serr.Problems)
	}
}
