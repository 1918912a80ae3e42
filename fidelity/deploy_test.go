package fidelity

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDeployManifestsOnTheRealServer dry-runs the kind backend's manifests
// (deploy/kubernetes, and the no-mount-propagation variant) against a real
// kube-apiserver: the deploy package's TestServerSideDryRun, pointed at a
// realkube control plane started here. It must run, not skip.
func TestDeployManifestsOnTheRealServer(t *testing.T) {
	c := startControlPlane(t, "fidelity-deploy")
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
