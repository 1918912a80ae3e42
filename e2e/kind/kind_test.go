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
	"github.com/csisim/csisim/realnodes"
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
	for i, n := range cfg.Nodes {
		roles[n.Role]++
		// No zones: the storage is shared, and the library's zone-less
		// scenarios move volumes between workers (cluster.yaml says why).
		if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			t.Errorf("node %d (%s): zone label %q: want none", i, n.Role, z)
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
	if !bytes.Contains(runScripts(t), []byte(storagePlaceholder)) {
		t.Errorf("run.sh and steps.sh do not replace %s", storagePlaceholder)
	}
}

// runScripts is run.sh with the steps it sources.
func runScripts(t *testing.T) []byte {
	t.Helper()
	var all []byte
	for _, f := range []string{"run.sh", "steps.sh", "lib.sh"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, raw...)
	}
	return all
}

// TestRunShMatchesDeploy: the names run.sh hard-codes are those of deploy/.
func TestRunShMatchesDeploy(t *testing.T) {
	script := runScripts(t)
	for _, want := range []string{
		"IMAGE=" + deploy.Image + "\n",
		"NAMESPACE=" + deploy.Namespace + "\n",
		"local version=" + deploy.SnapshotterVersion + " ",
		"daemonset/" + deploy.NodeDaemonSet + " ",
		"deployment/" + deploy.ControllerDeployment + " ",
		deploy.PartOfLabel + "=" + deploy.PartOf,
		`"$root/deploy/Dockerfile"`,
		`"$root"/deploy/` + deploy.ManifestDir + `/*.yaml`,
		`$root/deploy/` + deploy.ManifestDir + `/variants/built-here/`,
		"WORKLOAD_IMAGE=" + realnodes.WorkloadImage + "\n",
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

// sourced are the scripts that others source: not run, not executable.
var sourced = map[string]bool{"lib.sh": true, "steps.sh": true}

func TestScriptsParse(t *testing.T) {
	for _, s := range scripts(t) {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if executable := fi.Mode().Perm()&0o111 != 0; executable == sourced[s] {
			t.Errorf("%s: executable %v, want %v (sourced scripts are not run)", s, executable, !sourced[s])
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
		// shellcheck reports only on the file it is given; a sourced
		// script's variables are set by the script that sources it.
		args := []string{"-x", s}
		if sourced[s] {
			args = []string{"-x", "-s", "bash", "-e", "SC2034,SC2154", s}
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Join("..", "..")
		cmd.Args[len(cmd.Args)-1] = filepath.Join("e2e", "kind", s)
		if out, err := cmd.CombinedOutput(); err != nil {
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
	// What an own-daemon run looks at before it touches anything
	// (check_prerequisites, check_free), and what it would touch.
	"id":       `[ "$1" = -u ] && echo "${FAKE_UID:-0}"`,
	"dockerd":  `:`,
	"iptables": `[ "$1" = -C ] && exit 1`, // no rule is there
	"pgrep":    `exit "${FAKE_PGREP_RC:-1}"`,
	"ip": `case "$*" in
  "-4 -o addr show") echo "1: lo    inet 127.0.0.1/8 scope host lo"
    [ -z "${FAKE_ADDR:-}" ] || echo "2: eth1    inet $FAKE_ADDR scope global eth1";;
  "-4 route show default") echo "default via 192.168.1.1 dev eth0";;
  "-4 route get "*) echo "$4 via 192.168.1.1 dev ${FAKE_ROUTE_DEV:-eth0} src 192.168.1.2";;
esac`,
	"ss": `for p in ${FAKE_PORTS_IN_USE:-}; do
  [ "$2" = "sport = :$p" ] && echo "LISTEN 0 4096 127.0.0.1:$p 0.0.0.0:*"
done`,
	// go mod download answers with the fake module of runScript.
	"go": `case " $* " in
  *" -tags e2e "*) exit "${FAKE_GO_E2E_RC:-0}";;
  *" mod download "*) printf '{\n\t"Dir": "%s",\n}\n' "$FAKE_DIR/module";;
esac`,
}

// fakeModule is what the fake go's module source holds: the files of
// external-snapshotter run.sh applies.
var fakeModule = []string{
	"config/crd/snapshot.storage.k8s.io_volumesnapshots.yaml",
	"config/crd/snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
	"config/crd/snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
	"config/crd/groupsnapshot.storage.k8s.io_volumegroupsnapshots.yaml",
	"deploy/kubernetes/snapshot-controller/rbac-snapshot-controller.yaml",
	"deploy/kubernetes/snapshot-controller/setup-snapshot-controller.yaml",
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
	for _, f := range fakeModule {
		p := filepath.Join(dir, "module", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# fake\n"), 0o644); err != nil {
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
	for _, name := range []string{"docker", "kind", "kubectl", "go"} {
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
		"E2E_KIND_FIGURES=" + filepath.Join(dir, "kind.md"), "CSISIM_CACHE=" + filepath.Join(dir, "cache"),
		"E2E_KIND_HOST_LOCK_DIR=" + filepath.Join(dir, "hostlock"),
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
		{"no docker", []string{"docker"}, []string{"E2E_KIND_MODE=user"}, []string{"docker not found", "install Docker"}},
		{"no kind", []string{"kind"}, nil, []string{"kind not found", "go install sigs.k8s.io/kind@v0.33.0"}},
		{"no kubectl", []string{"kubectl"}, nil, []string{"kubectl not found"}},
		{"no daemon", nil, []string{"FAKE_DOCKER_INFO_RC=1", "E2E_KIND_MODE=user"}, []string{"no Docker daemon reachable", "E2E_KIND_MODE=own"}},
		// No daemon answers, so a daemon of the run's own: it needs root
		// and dockerd, which this PATH does not have.
		{"no daemon, no dockerd", []string{"dockerd"}, []string{"FAKE_DOCKER_INFO_RC=1"}, []string{"no Docker daemon answers and dockerd is not installed", "make e2e-kind-prepare"}},
		{"no daemon, not root", nil, []string{"FAKE_DOCKER_INFO_RC=1", "FAKE_UID=1000"}, []string{"a daemon of the run's own needs root"}},
		{"unknown mode", nil, []string{"E2E_KIND_MODE=podman"}, []string{"E2E_KIND_MODE=podman: want auto, user or own"}},
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
	q := regexp.QuoteMeta(root)
	kubectl := `^kubectl --kubeconfig \S+ `
	steps := []string{
		`^kind create cluster --name c1 --config \S+/cluster.yaml --kubeconfig \S+/kubeconfig --wait 3m$`,
		`^docker build -f ` + q + `/deploy/Dockerfile -t csisim:e2e ` + q + `$`,
		`^kind load docker-image csisim:e2e --name c1$`,
		`^go mod download -json github.com/kubernetes-csi/external-snapshotter/client/v8@v8.7.0$`,
		kubectl + `apply -f \S+/module/config/crd/snapshot.storage.k8s.io_volumesnapshots.yaml$`,
		kubectl + `wait --for=condition=Established --timeout=60s crd --all$`,
		kubectl + `apply -f \S+/rbac-snapshot-controller.yaml -f \S+/setup-snapshot-controller.yaml$`,
		kubectl + `-n kube-system set image deployment/snapshot-controller snapshot-controller=registry.k8s.io/sig-storage/snapshot-controller:v8.7.0$`,
		kubectl + `-n kube-system rollout status deployment/snapshot-controller --timeout=5m$`,
		kubectl + `apply -f ` + q + `/deploy/kubernetes/00-namespace.yaml$`,
		// The regular manifests with a Docker of the user's.
		kubectl + `apply -f ` + q + `/deploy/kubernetes/30-controller.yaml$`,
		kubectl + `apply -f ` + q + `/deploy/kubernetes/31-node.yaml$`,
		kubectl + `-n csisim rollout status daemonset/csisim-node --timeout=5m$`,
		kubectl + `-n csisim rollout status deployment/csisim-controller --timeout=5m$`,
		kubectl + `-n csisim wait --for=condition=Ready pod -l app.kubernetes.io/part-of=csisim --timeout=5m$`,
		`^go test -count=1 -run TestServerSideDryRun ./deploy/$`,
		`^go test -count=1 -timeout 150m -tags e2e ./e2e/ -args -ginkgo.timeout=150m -kubeconfig=\S+/kubeconfig -kind-report=\S+$`,
		`^go test -count=1 -p 1 -timeout 30m -tags e2e ./e2e/kind/ ./e2e/kind/faults/ -args -kubeconfig=\S+/kubeconfig$`,
		kubectl + `-n csisim wait --for=condition=Complete --timeout=60m job/csisim-seed-sweep$`,
		`^go -C ` + q + ` run ./e2e/kind/sweepcheck --seeds 1..400 `,
		kubectl + `-n csisim wait --for=condition=Failed --timeout=15m job/csisim-seeded-failure$`,
		`^go run ./e2e/kind/sweepcheck --seeds 1..10 --expect-fail 7 `,
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
	if n := len(regexp.MustCompile(`(?m)^kubectl .* apply -f \S+/config/crd/`).FindAllString(strings.Join(res.calls, "\n"), -1)); n != 4 {
		t.Errorf("%d CRDs applied, want the 4 of the module", n)
	}
	if i := index(res.calls, `variants/built-here`); i >= 0 {
		t.Errorf("applied the built-here variant with a Docker of the user's: %s", res.calls[i])
	}
	if fig, err := os.ReadFile(filepath.Join(res.dir, "kind.md")); err != nil || !bytes.Contains(fig, []byte("<!-- figures: ")) {
		t.Errorf("no figures written to E2E_KIND_FIGURES: %v\n%s", err, fig)
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
		`^go test -count=1 -timeout 150m -tags e2e -v -run TestE2E ./e2e/ -args`,
		`^kubectl --kubeconfig \S+ -n csisim describe pods$`,
		`^kind export logs ` + regexp.QuoteMeta(artifacts) + `/kind --name csisim-e2e$`,
		`^kind delete cluster --name csisim-e2e$`,
	} {
		if index(res.calls, s) < 0 {
			t.Errorf("no call matches %s; calls:\n%s", s, strings.Join(res.calls, "\n"))
		}
	}
	if !regexp.MustCompile(`FAILED \(exit 1\) after \d+ s; logs: ` + regexp.QuoteMeta(artifacts)).MatchString(res.stderr) {
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
	if res.code != 2 {
		t.Fatalf("exit code %d, want 2; output:\n%s", res.code, res.stderr)
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
