package kind_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/csisim/csisim/deploy"
)

// kindConfig is the part of kind's v1alpha4 Cluster config that
// cluster.yaml uses; strict decoding makes any other field an error here
// (kind itself would reject a misspelt one only at run time, on Docker).
type kindConfig struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Nodes      []struct {
		Role        string            `json:"role"`
		Labels      map[string]string `json:"labels"`
		ExtraMounts []struct {
			HostPath      string `json:"hostPath"`
			ContainerPath string `json:"containerPath"`
		} `json:"extraMounts"`
	} `json:"nodes"`
}

const storagePlaceholder = "__CSISIM_STORAGE__"

func TestClusterConfig(t *testing.T) {
	raw, err := os.ReadFile("cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg kindConfig
	if err := yaml.UnmarshalStrict(raw, &cfg); err != nil {
		t.Fatalf("cluster.yaml: %v", err)
	}
	if cfg.Kind != "Cluster" || cfg.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Errorf("cluster.yaml is %s %s, want kind.x-k8s.io/v1alpha4 Cluster", cfg.APIVersion, cfg.Kind)
	}
	roles := map[string]int{}
	zones := map[string]bool{}
	for i, n := range cfg.Nodes {
		roles[n.Role]++
		if n.Role == "worker" {
			z := n.Labels[corev1.LabelTopologyZone]
			if z == "" || zones[z] {
				t.Errorf("worker %d: zone label %q: want a zone of its own", i, z)
			}
			zones[z] = true
		}
		// Every node, the control plane too (it runs a node plugin and
		// usually the controller), shares the one storage directory.
		if len(n.ExtraMounts) != 1 || n.ExtraMounts[0].HostPath != storagePlaceholder || n.ExtraMounts[0].ContainerPath != deploy.StorageDir {
			t.Errorf("node %d (%s): extraMounts %+v, want exactly %s at %s", i, n.Role, n.ExtraMounts, storagePlaceholder, deploy.StorageDir)
		}
	}
	if roles["control-plane"] != 1 || roles["worker"] != 2 || len(cfg.Nodes) != 3 {
		t.Errorf("nodes by role %v, want one control-plane and two workers", roles)
	}
	script, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script, []byte(storagePlaceholder)) {
		t.Errorf("run.sh does not replace %s", storagePlaceholder)
	}
}

// TestRunShMatchesDeploy: the names run.sh hard-codes are those of deploy/.
func TestRunShMatchesDeploy(t *testing.T) {
	script, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"IMAGE=" + deploy.Image + "\n",
		"NAMESPACE=" + deploy.Namespace + "\n",
		"SNAPSHOTTER_VERSION=${SNAPSHOTTER_VERSION:-" + deploy.SnapshotterVersion + "}",
		"daemonset/" + deploy.NodeDaemonSet + " ",
		"deployment/" + deploy.ControllerDeployment + " ",
		deploy.PartOfLabel + "=" + deploy.PartOf,
		`"$root/deploy/Dockerfile"`,
		`"$root/deploy/` + deploy.ManifestDir + `/"`,
	} {
		if !bytes.Contains(script, []byte(want)) {
			t.Errorf("run.sh does not contain %q", want)
		}
	}
}

func scripts(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.sh")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	return files
}

func TestScriptsParse(t *testing.T) {
	for _, s := range scripts(t) {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
		if fi, err := os.Stat(s); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable", s)
		}
	}
}

// TestShellcheck runs shellcheck when it is installed (apt-get install
// shellcheck); with CSISIM_REQUIRE_SHELLCHECK=1 (make e2e-kind-check) a
// missing shellcheck fails the test instead of skipping it.
func TestShellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("CSISIM_REQUIRE_SHELLCHECK") == "1" {
			t.Fatal("shellcheck is not installed (CSISIM_REQUIRE_SHELLCHECK=1)")
		}
		t.Skip("shellcheck is not installed")
	}
	for _, s := range scripts(t) {
		if out, err := exec.Command(bin, s).CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", s, err, out)
		}
	}
}

// fake tools for run.sh: each logs "name args..." to $FAKE_LOG and
// behaves as configured through FAKE_* variables.
var fakes = map[string]string{
	"docker": `case "$1" in
  info) exit "${FAKE_DOCKER_INFO_RC:-0}";;
  exec) cat >"$FAKE_DIR/docker-exec-stdin";;
esac`,
	"kind": `case "$1 $2" in
  "get clusters") printf '%s\n' ${FAKE_EXISTING_CLUSTERS:-};;
  "create cluster")
    while [ $# -gt 0 ]; do
      if [ "$1" = --config ]; then cp "$2" "$FAKE_DIR/cluster.yaml"; fi
      shift
    done
    exit "${FAKE_KIND_CREATE_RC:-0}";;
esac`,
	"kubectl": `:`,
	"curl": `while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then echo "# downloaded" >"$2"; fi
  shift
done`,
	"go": `case " $* " in
  *" -tags e2e "*) exit "${FAKE_GO_E2E_RC:-0}";;
esac`,
}

type runResult struct {
	code   int
	stderr string
	calls  []string
	dir    string // fake dir: cluster.yaml, docker-exec-stdin
	tmp    string // TMPDIR of the run
}

// runScript runs run.sh with the fake tools first in PATH (all of them but
// the ones in without) and env added to the environment.
func runScript(t *testing.T, without []string, env ...string) runResult {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range fakes {
		skip := false
		for _, w := range without {
			skip = skip || w == name
		}
		if skip {
			continue
		}
		script := "#!/usr/bin/env bash\nprintf '%s\\n' \"" + name + " $*\" >>\"$FAKE_LOG\"\n" + body + "\nexit 0\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "calls.log")
	// PATH: the fakes, then only the directories of what run.sh needs
	// besides them (bash, coreutils, sed, grep).
	path := bin
	for _, tool := range []string{"bash", "env", "mktemp", "sed", "grep", "date", "dirname", "tee", "cp", "rm", "mkdir", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if d := filepath.Dir(p); !strings.Contains(":"+path+":", ":"+d+":") {
			path += ":" + d
		}
	}
	// The tools by variable, so that a real docker or kind elsewhere in
	// PATH is never reached; a missing fake is a path that does not exist.
	for _, name := range []string{"docker", "kind", "kubectl", "curl", "go"} {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err != nil {
			p = filepath.Join(dir, "missing", name)
		}
		env = append([]string{strings.ToUpper(name) + "=" + p}, env...)
	}
	bash, _ := exec.LookPath("bash")
	cmd := exec.Command(bash, "run.sh")
	cmd.Env = append([]string{
		"PATH=" + path, "HOME=" + dir, "TMPDIR=" + tmp,
		"FAKE_LOG=" + logFile, "FAKE_DIR=" + dir,
	}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err := cmd.Run()
	res := runResult{stderr: stderr.String(), dir: dir, tmp: tmp}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(logFile); err == nil {
		res.calls = strings.Split(strings.TrimSpace(string(raw)), "\n")
	}
	return res
}

// index returns the position of the first call matching pattern, -1 if
// none does.
func index(calls []string, pattern string) int {
	re := regexp.MustCompile(pattern)
	for i, c := range calls {
		if re.MatchString(c) {
			return i
		}
	}
	return -1
}

func TestRunShMissingTools(t *testing.T) {
	tests := []struct {
		name    string
		without []string
		env     []string
		want    []string
	}{
		{"no docker", []string{"docker"}, nil, []string{"docker not found", "install Docker"}},
		{"no kind", []string{"kind"}, nil, []string{"kind not found", "go install sigs.k8s.io/kind@v0.33.0"}},
		{"no kubectl", []string{"kubectl"}, nil, []string{"kubectl not found"}},
		{"no daemon", nil, []string{"FAKE_DOCKER_INFO_RC=1"}, []string{"no Docker daemon reachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runScript(t, tt.without, tt.env...)
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; output:\n%s", res.code, res.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("output does not say %q:\n%s", w, res.stderr)
				}
			}
			if i := index(res.calls, `^kind (create|delete)`); i >= 0 {
				t.Errorf("touched a cluster: %s", res.calls[i])
			}
		})
	}
}

func TestRunShSuccess(t *testing.T) {
	res := runScript(t, nil, "KIND_CLUSTER_NAME=c1")
	if res.code != 0 {
		t.Fatalf("exit code %d; output:\n%s", res.code, res.stderr)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The steps, in this order.
	steps := []string{
		`^kind create cluster --name c1 --config \S+/cluster.yaml --kubeconfig \S+/kubeconfig --wait 3m$`,
		`^docker build -f ` + regexp.QuoteMeta(root) + `/deploy/Dockerfile -t csisim:e2e ` + regexp.QuoteMeta(root) + `$`,
		`^kind load docker-image csisim:e2e --name c1$`,
		`^curl -fsSL --retry 3 -o \S+ https://raw.githubusercontent.com/kubernetes-csi/external-snapshotter/v8.7.0/client/config/crd/snapshot.storage.k8s.io_volumesnapshots.yaml$`,
		`^kubectl --kubeconfig \S+ apply -f \S+/crd/$`,
		`^kubectl --kubeconfig \S+ wait --for=condition=Established --timeout=60s crd/volumesnapshots.snapshot.storage.k8s.io$`,
		`^kubectl --kubeconfig \S+ wait --for=condition=Established --timeout=60s crd/volumegroupsnapshotcontents.groupsnapshot.storage.k8s.io$`,
		`^kubectl --kubeconfig \S+ apply -f \S+/controller/$`,
		`^kubectl --kubeconfig \S+ -n kube-system set image deployment/snapshot-controller snapshot-controller=registry.k8s.io/sig-storage/snapshot-controller:v8.7.0$`,
		`^kubectl --kubeconfig \S+ -n kube-system rollout status deployment/snapshot-controller --timeout=5m$`,
		`^kubectl --kubeconfig \S+ apply -f ` + regexp.QuoteMeta(root) + `/deploy/kubernetes/$`,
		`^kubectl --kubeconfig \S+ -n csisim rollout status daemonset/csisim-node --timeout=5m$`,
		`^kubectl --kubeconfig \S+ -n csisim rollout status deployment/csisim-controller --timeout=5m$`,
		`^kubectl --kubeconfig \S+ -n csisim wait --for=condition=Ready pod -l app.kubernetes.io/part-of=csisim --timeout=5m$`,
		`^go test -count=1 -run TestServerSideDryRun ./deploy/$`,
		`^go test -count=1 -p 1 -timeout 60m -tags e2e ./e2e/... -args -kubeconfig=\S+/kubeconfig$`,
		`^docker exec -i c1-control-plane sh -s$`,
		`^kind delete cluster --name c1$`,
	}
	last := -1
	for _, s := range steps {
		i := index(res.calls, s)
		if i < 0 {
			t.Errorf("no call matches %s; calls:\n%s", s, strings.Join(res.calls, "\n"))
			continue
		}
		if i < last {
			t.Errorf("%s comes before the step above it", s)
		}
		last = i
	}
	if n := len(regexp.MustCompile(`(?m)^curl `).FindAllString(strings.Join(res.calls, "\n"), -1)); n != 8 {
		t.Errorf("%d downloads, want 8 (6 CRDs, 2 snapshot-controller manifests)", n)
	}
	if i := index(res.calls, `export logs`); i >= 0 {
		t.Errorf("collected logs although everything passed: %s", res.calls[i])
	}
	cfg, err := os.ReadFile(filepath.Join(res.dir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cfg, []byte(storagePlaceholder)) || !regexp.MustCompile(`hostPath: `+regexp.QuoteMeta(res.tmp)+`/csisim-kind\.\w+/storage\n`).Match(cfg) {
		t.Errorf("cluster config given to kind does not mount the run's storage directory:\n%s", cfg)
	}
	stdin, _ := os.ReadFile(filepath.Join(res.dir, "docker-exec-stdin"))
	for _, want := range []string{"losetup --detach", "rm -rf /var/lib/csisim/root /var/lib/csisim/state"} {
		if !bytes.Contains(stdin, []byte(want)) {
			t.Errorf("storage cleanup script does not %q:\n%s", want, stdin)
		}
	}
	if left, _ := os.ReadDir(res.tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR after success: %v", left)
	}
}

func TestRunShFailureCollectsLogsAndDeletesCluster(t *testing.T) {
	artifacts := filepath.Join(t.TempDir(), "artifacts")
	res := runScript(t, nil, "FAKE_GO_E2E_RC=1", "ARTIFACTS="+artifacts, "E2E_GO_TEST_FLAGS=-v -run TestE2E")
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1; output:\n%s", res.code, res.stderr)
	}
	for _, s := range []string{
		`^go test -count=1 -p 1 -timeout 60m -tags e2e -v -run TestE2E ./e2e/... -args`,
		`^kubectl --kubeconfig \S+ -n csisim describe pods$`,
		`^kind export logs ` + regexp.QuoteMeta(artifacts) + `/kind --name csisim-e2e$`,
		`^kind delete cluster --name csisim-e2e$`,
	} {
		if index(res.calls, s) < 0 {
			t.Errorf("no call matches %s; calls:\n%s", s, strings.Join(res.calls, "\n"))
		}
	}
	if !strings.Contains(res.stderr, "FAILED (exit 1); logs: "+artifacts) {
		t.Errorf("output does not point at the logs:\n%s", res.stderr)
	}
	if _, err := os.Stat(filepath.Join(artifacts, "go-test.txt")); err != nil {
		t.Errorf("test output not kept: %v", err)
	}
}

func TestRunShClusterCreationFails(t *testing.T) {
	res := runScript(t, nil, "FAKE_KIND_CREATE_RC=1")
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1; output:\n%s", res.code, res.stderr)
	}
	if index(res.calls, `^kind delete cluster --name csisim-e2e$`) < 0 {
		t.Errorf("no cleanup after a failed create; calls:\n%s", strings.Join(res.calls, "\n"))
	}
	if i := index(res.calls, `^docker build`); i >= 0 {
		t.Errorf("went on after a failed create: %s", res.calls[i])
	}
}

func TestRunShLeavesExistingClusterAlone(t *testing.T) {
	res := runScript(t, nil, "FAKE_EXISTING_CLUSTERS=other csisim-e2e")
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1; output:\n%s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "a kind cluster named csisim-e2e exists already") {
		t.Errorf("output does not explain:\n%s", res.stderr)
	}
	if i := index(res.calls, `^(kind (create|delete|export)|docker (build|exec))`); i >= 0 {
		t.Errorf("touched the existing cluster: %s", res.calls[i])
	}
}

func TestRunShKeepCluster(t *testing.T) {
	res := runScript(t, nil, "KEEP_CLUSTER=1")
	if res.code != 0 {
		t.Fatalf("exit code %d; output:\n%s", res.code, res.stderr)
	}
	if i := index(res.calls, `^kind delete`); i >= 0 {
		t.Errorf("KEEP_CLUSTER=1 but: %s", res.calls[i])
	}
	if !strings.Contains(res.stderr, "KEEP_CLUSTER=1: cluster csisim-e2e stays; kubeconfig: ") {
		t.Errorf("output does not say where the cluster is:\n%s", res.stderr)
	}
}
