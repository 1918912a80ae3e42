package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/csisim/csisim/internal/testenv"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// completionIndexEnv is the variable in which a pod of an Indexed Job
// finds its index, from the pod annotation below.
const (
	completionIndexEnv        = "JOB_COMPLETION_INDEX"
	completionIndexAnnotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
)

// TestSeedSweepJob: the Indexed Job runs `csisim run --seeds` in as many
// shards as it has completions, each shard its own index, with a driver
// that needs no privileges, its JUnit report on a volume, and a scenario
// the image holds.
func TestSeedSweepJob(t *testing.T) {
	job := one[*batchv1.Job](t, load(t, seedSweepPattern))
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion || spec.Completions == nil || spec.Parallelism == nil {
		t.Fatalf("Job %s: completionMode %v, completions %v, parallelism %v; want Indexed with both set", job.Name, spec.CompletionMode, spec.Completions, spec.Parallelism)
	}
	if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 0 {
		t.Errorf("Job %s: backoffLimitPerIndex %v, want 0: a shard's seeds fail the same way again", job.Name, spec.BackoffLimitPerIndex)
	}
	pod := &spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s, want Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want one", len(pod.Containers))
	}
	c := &pod.Containers[0]
	if c.Image != Image || c.ImagePullPolicy != corev1.PullIfNotPresent || !slices.Equal(c.Command, []string{"/usr/local/bin/csisim"}) {
		t.Errorf("%s: image %s (pull %s), command %v; want %s (IfNotPresent), command /usr/local/bin/csisim", c.Name, c.Image, c.ImagePullPolicy, c.Command, Image)
	}

	args := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		args[name] = value
	}
	if c.Args[0] != "run" || args["seeds"] == "" || !hasArg(c, "--mock-driver") {
		t.Errorf("%s: args %q, want run --seeds=... --mock-driver", c.Name, c.Args)
	}
	if want := "$(" + completionIndexEnv + ")/" + strconv.Itoa(int(*spec.Completions)); args["shard"] != want {
		t.Errorf("%s: --shard=%s, want %s: shard i of as many as the Job has completions", c.Name, args["shard"], want)
	}
	junit := args["junit"]
	if !strings.Contains(junit, "$("+completionIndexEnv+")") {
		t.Errorf("%s: --junit=%s: each shard needs a file of its own (put $(%s) in the name)", c.Name, junit, completionIndexEnv)
	}
	if vol, _ := resolve(t, pod, c, junit); vol != "" && volume(pod, vol).EmptyDir == nil && volume(pod, vol).PersistentVolumeClaim == nil {
		t.Errorf("%s: --junit=%s is on volume %s, neither an emptyDir nor a claim", c.Name, junit, vol)
	}
	dockerfile, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), "/src/scenarios/library "+ScenarioLibraryDir) {
		t.Errorf("the Dockerfile does not copy scenarios/library to %s, where the Job finds its scenario", ScenarioLibraryDir)
	}
	scenarioFile := c.Args[len(c.Args)-1]
	rel, inLibrary := strings.CutPrefix(scenarioFile, ScenarioLibraryDir+"/")
	if _, err := os.Stat(filepath.Join("..", "scenarios", "library", rel)); !inLibrary || err != nil {
		t.Errorf("%s: scenario %s is not one of the library the image holds in %s", c.Name, scenarioFile, ScenarioLibraryDir)
	}

	checkIndexVariable(t, c)
	checkRestricted(t, pod, c)
	checkRunFlags(t, c.Args)
}

// checkIndexVariable: every $(VAR) of the args is defined, the index from
// the pod's annotation.
func checkIndexVariable(t *testing.T, c *corev1.Container) {
	for _, a := range c.Args {
		for _, ref := range envRef.FindAllStringSubmatch(a, -1) {
			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == ref[1] })
			if i < 0 {
				t.Errorf("%s: arg %q uses $(%s), which the container does not define", c.Name, a, ref[1])
				continue
			}
			if e := c.Env[i]; e.Name == completionIndexEnv && (e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != completionIndexAnnotation) {
				t.Errorf("%s: %s is not the field %s", c.Name, e.Name, completionIndexAnnotation)
			}
		}
	}
}

// checkRestricted: the mock driver needs nothing, so the pod asks for
// nothing (Pod Security "restricted"), and csisim's temporary files go to
// a writable volume.
func checkRestricted(t *testing.T, pod *corev1.PodSpec, c *corev1.Container) {
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and the RuntimeDefault seccomp profile", psc)
	}
	if sc == nil || (sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: securityContext %+v: want unprivileged, no privilege escalation, a read-only root, capabilities ALL dropped", c.Name, sc)
	}
	tmp := ""
	for _, e := range c.Env {
		if e.Name == "TMPDIR" {
			tmp = e.Value
		}
	}
	if vol, _ := resolve(t, pod, c, filepath.Join(tmp, "x")); tmp == "" || vol == "" || volume(pod, vol).EmptyDir == nil {
		t.Errorf("%s: TMPDIR=%q is not on an emptyDir (the root file system is read-only)", c.Name, tmp)
	}
}

// checkRunFlags: csisim run knows every flag the Job passes, and takes
// the values: the args, with the index filled in and the scenario taken
// from the repository, are a sweep csisim starts (run here on no seeds:
// the shard index is past the seeds given).
func checkRunFlags(t *testing.T, args []string) {
	if testing.Short() {
		t.Log("-short: not building csisim to try the Job's flags")
		return
	}
	csisim := testenv.CsisimBinary(t)
	index := regexp.MustCompile(`\$\(` + completionIndexEnv + `\)`)
	results := t.TempDir()
	var local []string
	for _, a := range args {
		a = index.ReplaceAllString(a, "1")
		a = strings.Replace(a, ScenarioLibraryDir, filepath.Join("..", "scenarios", "library"), 1)
		a = strings.Replace(a, "--junit=/results/", "--junit="+results+"/", 1)
		if strings.HasPrefix(a, "--seeds=") {
			a = "--seeds=7" // one seed: shard 1 of any n > 1 has none of it
		}
		local = append(local, a)
	}
	// A short TMPDIR: the run's sockets live below it, and a unix socket's
	// path is short.
	tmp, err := os.MkdirTemp("", "job")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cmd := exec.Command(csisim, local...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("csisim %s: %v\n%s", strings.Join(local, " "), err, out)
	}
	if !strings.Contains(string(out), "0 seeds") {
		t.Errorf("csisim %s ran seeds; want none in shard 1:\n%s", strings.Join(local, " "), out)
	}
	report, err := os.ReadFile(filepath.Join(results, "junit-1.xml"))
	if err != nil || !strings.Contains(string(report), "<testsuites") {
		t.Errorf("shard 1 wrote no JUnit report to %s: %v", results, err)
	}
}

// TestCIWorkflow: the GitHub Actions example runs one shard per matrix
// entry, as many shards as --shard says, and uploads every shard's
// JUnit report, also a failing one's.
func TestCIWorkflow(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("ci", "github-actions-seed-sweep.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix struct {
					Shard []int `json:"shard"`
				} `json:"matrix"`
			} `json:"strategy"`
			Steps []struct {
				Uses string            `json:"uses"`
				Run  string            `json:"run"`
				If   string            `json:"if"`
				With map[string]string `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("the workflow is not YAML: %v", err)
	}
	sweep, ok := wf.Jobs["sweep"]
	if !ok {
		t.Fatal("no job sweep")
	}
	shards := sweep.Strategy.Matrix.Shard
	for i, s := range shards {
		if s != i {
			t.Fatalf("matrix shards %v, want 0, 1, ... (--shard is 0-based)", shards)
		}
	}
	var run, upload string
	for _, st := range sweep.Steps {
		if strings.Contains(st.Run, "csisim run") {
			run = st.Run
		}
		if strings.HasPrefix(st.Uses, "actions/upload-artifact@") && st.If == "always()" {
			upload = st.With["path"]
		}
	}
	if want := "--shard ${{ matrix.shard }}/" + strconv.Itoa(len(shards)); !strings.Contains(run, want) {
		t.Errorf("the sweep step %q lacks %q", run, want)
	}
	junit := regexp.MustCompile(`--junit (\S+)`).FindStringSubmatch(run)
	if junit == nil || upload == "" || !strings.HasPrefix(junit[1], upload) {
		t.Errorf("the JUnit report (%v) is not below what an always() upload step uploads (%q)", junit, upload)
	}
}

// TestMain removes the csisim binary the tests built.
func TestMain(m *testing.M) { testenv.Main(m) }
