package fakekube

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// kubectlServer serves a fresh server over HTTP and returns kubectl's
// arguments and environment for it.
func kubectlServer(t *testing.T) (*Server, string, []string, []string) {
	t.Helper()
	kubectl := kubectlPath(t)
	srv := New(Options{Seed: 1, Clock: clocktesting.NewFakePassiveClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = l.Close() })
	base, env := kubectlEnv(t, "http://"+l.Addr().String())
	return srv, kubectl, base, env
}

// kubectlFails runs kubectl, which must fail, and returns what it said.
func kubectlFails(t *testing.T, kubectl string, base, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubectl, append(append([]string(nil), base...), args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want a failure:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

func writeManifest(t *testing.T, mode string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(appliedConfigMap, "%s", mode)), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// kubectl apply --server-side as against a real server: it creates, a
// second manager changing the first's field meets a conflict with the
// real server's words and kubectl's advice, --force-conflicts takes the
// field; the managers show in managedFields.
func TestKubectlServerSideApply(t *testing.T) {
	_, kubectl, base, env := kubectlServer(t)
	run := func(args ...string) string { return runKubectl(t, kubectl, base, env, args...) }

	if out := run("apply", "--server-side", "-f", writeManifest(t, "fast")); !strings.Contains(out, "configmap/settings serverside-applied") {
		t.Fatalf("first apply: %s", out)
	}
	out := kubectlFails(t, kubectl, base, env, "apply", "--server-side", "--field-manager", "ops", "-f", writeManifest(t, "slow"))
	for _, want := range []string{`Apply failed with 1 conflict: conflict with "kubectl": .data.mode`, "--force-conflicts"} {
		if !strings.Contains(out, want) {
			t.Errorf("the conflicting apply says:\n%s\nwant %q in it", out, want)
		}
	}
	if got := run("get", "configmap", "settings", "-o", "jsonpath={.data.mode}"); got != "fast" {
		t.Errorf("after the refused apply, mode %q, want fast", got)
	}
	run("apply", "--server-side", "--force-conflicts", "--field-manager", "ops", "-f", writeManifest(t, "slow"))
	got := run("get", "configmap", "settings", "-o", `jsonpath={.data.mode} {range .metadata.managedFields[*]}{.manager}:{.operation} {end}`)
	if got != "slow ops:Apply " {
		t.Errorf("after the forced apply: %q, want mode slow, managed by ops alone", got)
	}
	// kubectl get hides managedFields unless asked.
	if y := run("get", "configmap", "settings", "-o", "yaml"); strings.Contains(y, "managedFields") {
		t.Errorf("kubectl get -o yaml shows managedFields:\n%s", y)
	}
	if y := run("get", "configmap", "settings", "-o", "yaml", "--show-managed-fields"); !strings.Contains(y, "manager: ops") {
		t.Errorf("kubectl get -o yaml --show-managed-fields:\n%s", y)
	}
}

// kubectl's other writes name their managers themselves: create as
// kubectl-create, client-side apply as kubectl-client-side-apply, and a
// server-side apply then takes over client-side apply's fields.
func TestKubectlFieldManagers(t *testing.T) {
	_, kubectl, base, env := kubectlServer(t)
	run := func(args ...string) string { return runKubectl(t, kubectl, base, env, args...) }
	managers := func(name string) string {
		return run("get", "configmap", name, "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}:{.operation} {end}`)
	}
	run("create", "configmap", "made", "--from-literal", "a=b")
	if got := managers("made"); got != "kubectl-create:Update " {
		t.Errorf("kubectl create: managers %q", got)
	}
	run("apply", "-f", writeManifest(t, "fast"))
	if got := managers("settings"); got != "kubectl-client-side-apply:Update " {
		t.Errorf("kubectl apply: managers %q", got)
	}
	run("apply", "--server-side", "-f", writeManifest(t, "slow"))
	if got := run("get", "configmap", "settings", "-o", "jsonpath={.data.mode}"); got != "slow" {
		t.Errorf("server-side apply over client-side apply's fields: mode %q, want slow (kubectl takes them over)", got)
	}
}
