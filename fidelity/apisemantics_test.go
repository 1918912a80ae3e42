package fidelity

import (
	"context"
	"testing"
	"time"

	"github.com/csisim/csisim/fakekube/apitest"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/runroot"
)

// TestAPISemanticsOnTheRealServer runs fakekube's API-semantics checks,
// unchanged, against a real kube-apiserver with its controller manager:
// what fakekube's own run of them claims is only as good as this run.
func TestAPISemanticsOnTheRealServer(t *testing.T) {
	c := startControlPlane(t, "fidelity")
	apitest.Run(t, apitest.Target{Config: c.RESTConfig(), SnapshotCRDs: true, Timeout: 90 * time.Second})
}

// startControlPlane starts a realkube control plane under a run root of
// its own for the test, and stops it when the test ends; configure may
// change its Config first.
func startControlPlane(t *testing.T, name string, configure ...func(*realkube.Config)) *realkube.Cluster {
	t.Helper()
	bin := requireBinaries(t, realkube.ControlPlaneBinaries...)
	root, err := runroot.New(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := root.Close(); err != nil {
			t.Errorf("closing the run root: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := realkube.Config{BinDir: bin, RootDir: root.Path("cluster")}
	for _, f := range configure {
		f(&cfg)
	}
	c, err := realkube.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return c
}
