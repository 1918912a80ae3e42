package fidelity

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/runroot"
)

// TestDeployManifestsOnTheRealServer dry-runs the kind backend's manifests
// (deploy/kubernetes, and the no-mount-propagation variant) against a real
// kube-apiserver: the deploy package's TestServerSideDryRun, pointed at a
// realkube control plane started here. It must run, not skip.
func TestDeployManifestsOnTheRealServer(t *testing.T) {
	bin := requireBinaries(t, realkube.ControlPlaneBinaries...)
	root, err := runroot.New("fidelity-deploy")
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
	c, err := realkube.Start(ctx, realkube.Config{BinDir: bin, RootDir: root.Path("cluster")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "TestServerSideDryRun", "../deploy/")
	cmd.Env = append(os.Environ(), "CSISIM_REALKUBE_KUBECONFIG="+c.KubeconfigPath())
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the server-side dry run failed: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: TestServerSideDryRun (") || !strings.Contains(string(out), "--- PASS: TestServerSideDryRun") {
		t.Fatal("the server-side dry run did not run")
	}
}
