// Command build compiles the real Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) and the CSI
// sidecars from the Go module proxy into a versioned cache outside the
// repository, by default
//
//	${CSISIM_CACHE:-$HOME/.cache/csisim}/realkube/v1.37.2/bin/
//
// Every upstream main package is built from a scratch module (under
// <cache>/src/<group>/, never the repository's go.mod) that requires the
// upstream module and repeats its replace directives; replaces that point at
// a directory inside the upstream repository (k8s.io/kubernetes' staging
// modules, external-snapshotter's client) are pointed at the published
// modules instead.
//
// Binaries are built one at a time. A binary that is already present with a
// matching stamp (module, version, ldflags, Go version) is skipped, so the
// command is idempotent and can be resumed after an interruption.
//
// Usage:
//
//	go run ./realkube/build [--only etcd,kube-apiserver,...] [--cache DIR] [--force] [--list]
//
// Without --only it builds the control plane, the kubelet and the sidecars;
// --only kube-controller-manager-timed builds the controller manager whose
// attach/detach wait for unmount a scenario's cluster.timing can scale
// (csisim diff --speedup; left out of the default set, which CI builds on
// a fresh machine within its budget, as no test in make test needs it);
// --only kind builds what a kind cluster made here needs besides them
// (kubeadm, kubectl, kube-proxy, crictl, kind itself and crane, for
// make e2e-kind-prepare).
package main

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/csisim/csisim/internal/cachedir"
)

// KubeVersion is the Kubernetes release the cache is named after.
const KubeVersion = "v1.37.2"

// component is one binary to build.
type component struct {
	name    string // binary name in the cache
	group   string // scratch module it is built from
	module  string // upstream module
	version string // upstream module version
	pkg     string // main package (module root if equal to module)
	ldflags []string
	// set is the set of binaries the component belongs to: "" for the
	// real control plane and sidecars that a plain run builds, "kind" for
	// what only a kind cluster made here needs (make e2e-kind-prepare),
	// built when named with --only.
	set string
	// main, if set, is the source of a main package of csisim's own that
	// the build writes into the scratch module (cmd/<name>/main.go) and
	// builds instead of an upstream one; pkg is then that package.
	main string
}

// kcmTimed is the source of kube-controller-manager-timed: the upstream
// controller manager with the attach/detach controller's wait for unmount
// taken from the environment (package timing, MaxWaitForUnmountEnv).
//
//go:embed kcmtimed.go.txt
var kcmTimed string

func kubeLdflags() []string {
	v := strings.TrimPrefix(KubeVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	var out []string
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		out = append(out,
			"-X "+p+".gitVersion="+KubeVersion,
			"-X "+p+".gitMajor="+parts[0],
			"-X "+p+".gitMinor="+parts[1],
			"-X "+p+".gitTreeState=clean",
		)
	}
	return out
}

var components = []component{
	{name: "etcd", group: "etcd", module: "go.etcd.io/etcd/server/v3", version: "v3.7.3", pkg: "go.etcd.io/etcd/server/v3"},
	{name: "kube-apiserver", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kube-apiserver", ldflags: kubeLdflags()},
	{name: "kube-controller-manager", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kube-controller-manager", ldflags: kubeLdflags()},
	{name: "kube-controller-manager-timed", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion,
		pkg: "csisim.local/realkube-build/kubernetes/cmd/kube-controller-manager-timed", ldflags: kubeLdflags(), main: kcmTimed,
		set: speedupSet},
	{name: "kube-scheduler", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kube-scheduler", ldflags: kubeLdflags()},
	// kubelet: the real node agent of realnodes (issue 12); it shares the
	// kubernetes scratch module with the control plane.
	{name: "kubelet", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kubelet", ldflags: kubeLdflags()},
	{name: "csi-provisioner", group: "external-provisioner", module: "github.com/kubernetes-csi/external-provisioner/v6", version: "v6.4.0", pkg: "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner", ldflags: []string{"-X main.version=v6.4.0"}},
	{name: "csi-attacher", group: "external-attacher", module: "github.com/kubernetes-csi/external-attacher/v4", version: "v4.13.0", pkg: "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher", ldflags: []string{"-X main.version=v4.13.0"}},
	{name: "csi-resizer", group: "external-resizer", module: "github.com/kubernetes-csi/external-resizer/v2", version: "v2.3.0", pkg: "github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer", ldflags: []string{"-X main.version=v2.3.0"}},
	{name: "snapshot-controller", group: "external-snapshotter", module: "github.com/kubernetes-csi/external-snapshotter/v8", version: "v8.7.0", pkg: "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller", ldflags: []string{"-X main.version=v8.7.0"}},
	{name: "csi-snapshotter", group: "external-snapshotter", module: "github.com/kubernetes-csi/external-snapshotter/v8", version: "v8.7.0", pkg: "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter", ldflags: []string{"-X main.version=v8.7.0"}},
	// The kind set (e2e/kind/prepare.sh): what a kind node image made here
	// holds besides the kubelet, and kind itself. kindnetd is not among
	// them: its module is not on the proxy (e2e/kind/README.md).
	{name: "kubeadm", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kubeadm", ldflags: kubeLdflags(), set: kindSet},
	{name: "kubectl", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kubectl", ldflags: kubeLdflags(), set: kindSet},
	{name: "kube-proxy", group: "kubernetes", module: "k8s.io/kubernetes", version: KubeVersion, pkg: "k8s.io/kubernetes/cmd/kube-proxy", ldflags: kubeLdflags(), set: kindSet},
	{name: "crictl", group: "cri-tools", module: "sigs.k8s.io/cri-tools", version: "v1.37.0", pkg: "sigs.k8s.io/cri-tools/cmd/crictl", ldflags: []string{"-X sigs.k8s.io/cri-tools/pkg/version.Version=v1.37.0"}, set: kindSet},
	{name: "kind", group: "kind", module: "sigs.k8s.io/kind", version: "v0.33.0", pkg: "sigs.k8s.io/kind", set: kindSet},
	// crane serves the registry an own-daemon kind run pulls busybox from.
	{name: "crane", group: "go-containerregistry", module: "github.com/google/go-containerregistry", version: "v0.22.1", pkg: "github.com/google/go-containerregistry/cmd/crane", set: kindSet},
}

// kindSet names the binaries only a kind cluster made here needs.
const kindSet = "kind"

// speedupSet names the binaries only a scaled timing needs (csisim diff
// --speedup, cluster.timing), built when named with --only.
const speedupSet = "speedup"

// controlPlane are the binaries needed to run a control plane without sidecars.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

func defaultCache() string { return filepath.Join(cachedir.Root(), "realkube", KubeVersion) }

func main() {
	cache := flag.String("cache", defaultCache(), "versioned cache directory; binaries go to DIR/bin, scratch modules to DIR/src")
	only := flag.String("only", "", "comma-separated binaries to build (or \"control-plane\"); default all")
	force := flag.Bool("force", false, "rebuild even if a binary with a matching stamp is present")
	list := flag.Bool("list", false, "list the binaries and their state, build nothing")
	goTool := flag.String("go", "go", "go command to use")
	flag.Parse()

	if err := run(*cache, *only, *force, *list, *goTool); err != nil {
		fmt.Fprintln(os.Stderr, "realkube build:", err)
		os.Exit(1)
	}
}

func selectComponents(only string) ([]component, error) {
	if only == "" {
		var out []component
		for _, c := range components {
			if c.set == "" {
				out = append(out, c)
			}
		}
		return out, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		switch n {
		case "":
		case "control-plane":
			for _, c := range controlPlane {
				want[c] = true
			}
		case kindSet:
			for _, c := range components {
				if c.set == kindSet {
					want[c.name] = true
				}
			}
		default:
			want[n] = true
		}
	}
	var out []component
	for _, c := range components {
		if want[c.name] {
			out = append(out, c)
			delete(want, c.name)
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		sort.Strings(unknown)
		var known []string
		for _, c := range components {
			known = append(known, c.name)
		}
		return nil, fmt.Errorf("unknown binaries %s (known: %s, control-plane, kind)", strings.Join(unknown, ","), strings.Join(known, ","))
	}
	return out, nil
}

func run(cache, only string, force, list bool, goTool string) error {
	sel, err := selectComponents(only)
	if err != nil {
		return err
	}
	goVersion, err := output(goTool, "", nil, "env", "GOVERSION")
	if err != nil {
		return fmt.Errorf("go env GOVERSION: %w", err)
	}
	goVersion = strings.TrimSpace(goVersion)
	binDir := filepath.Join(cache, "bin")

	if list {
		for _, c := range sel {
			state := "missing"
			if ok, _ := upToDate(binDir, c, goVersion); ok {
				state = "built"
			} else if _, err := os.Stat(filepath.Join(binDir, c.name)); err == nil {
				state = "stale"
			}
			fmt.Printf("%-24s %-8s %s@%s\n", c.name, state, c.module, c.version)
		}
		return nil
	}

	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	unlock, err := lock(filepath.Join(cache, ".build.lock"))
	if err != nil {
		return err
	}
	defer unlock()

	fmt.Printf("realkube build: %d binaries into %s (%s, %s/%s)\n", len(sel), binDir, goVersion, runtime.GOOS, runtime.GOARCH)
	total := time.Now()
	var failed []string
	for i, c := range sel {
		prefix := fmt.Sprintf("[%d/%d] %s", i+1, len(sel), c.name)
		if ok, _ := upToDate(binDir, c, goVersion); ok && !force {
			fmt.Printf("%s: up to date (%s@%s), skipped\n", prefix, c.module, c.version)
			continue
		}
		fmt.Printf("%s: building %s@%s ...\n", prefix, c.pkg, c.version)
		start := time.Now()
		err := build(cache, binDir, c, goTool, goVersion)
		d := time.Since(start).Round(time.Second)
		if err != nil {
			fmt.Printf("%s: FAILED after %s: %v\n", prefix, d, err)
			failed = append(failed, c.name)
			recordTime(cache, c, goVersion, d, err)
			continue
		}
		fmt.Printf("%s: built in %s\n", prefix, d)
		recordTime(cache, c, goVersion, d, nil)
	}
	fmt.Printf("realkube build: finished in %s\n", time.Since(total).Round(time.Second))
	if len(failed) > 0 {
		return fmt.Errorf("failed to build: %s", strings.Join(failed, ", "))
	}
	return nil
}

// stamp identifies what a binary was built from: for one of csisim's own
// main packages, the hash of its source too.
func stamp(c component, goVersion string) string {
	s := fmt.Sprintf("%s@%s %s ldflags=%q %s/%s\n", c.pkg, c.version, goVersion, strings.Join(c.ldflags, " "), runtime.GOOS, runtime.GOARCH)
	if c.main != "" {
		s += fmt.Sprintf("main sha256:%x\n", sha256.Sum256([]byte(c.main)))
	}
	return s
}

func stampPath(binDir string, c component) string {
	return filepath.Join(binDir, "."+c.name+".stamp")
}

func upToDate(binDir string, c component, goVersion string) (bool, error) {
	fi, err := os.Stat(filepath.Join(binDir, c.name))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o100 == 0 {
		return false, err
	}
	b, err := os.ReadFile(stampPath(binDir, c))
	if err != nil {
		return false, err
	}
	return string(b) == stamp(c, goVersion), nil
}

// build writes the scratch module for c's group and builds c into binDir.
func build(cache, binDir string, c component, goTool, goVersion string) error {
	srcDir := filepath.Join(cache, "src", c.group)
	if err := writeScratchModule(srcDir, c, goTool); err != nil {
		return fmt.Errorf("scratch module: %w", err)
	}
	if c.main != "" {
		dir := filepath.Join(srcDir, "cmd", c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(c.main), 0o644); err != nil {
			return err
		}
	}
	tmp := filepath.Join(binDir, "."+c.name+".tmp")
	_ = os.Remove(tmp)
	args := []string{"build", "-trimpath", "-o", tmp}
	if len(c.ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(c.ldflags, " "))
	}
	args = append(args, c.pkg)
	cmd := exec.Command(goTool, args...)
	cmd.Dir = srcDir
	cmd.Env = buildEnv()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	_ = os.Remove(stampPath(binDir, c))
	if err := os.Rename(tmp, filepath.Join(binDir, c.name)); err != nil {
		return err
	}
	return os.WriteFile(stampPath(binDir, c), []byte(stamp(c, goVersion)), 0o644)
}

func buildEnv() []string {
	env := os.Environ()
	// -mod=mod lets the go command fill in go.sum of the scratch module;
	// CGO is not needed by any of these binaries and keeps them static.
	env = append(env, "GOFLAGS=-mod=mod -buildvcs=false", "CGO_ENABLED=0", "GOWORK=off")
	return env
}

// modFile is the subset of `go mod edit -json` output used here.
type modFile struct {
	Go      string
	Require []struct {
		Path    string
		Version string
	}
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

// writeScratchModule writes srcDir/go.mod requiring c.module@c.version with
// the upstream module's replace directives, local ones redirected to
// published modules. An existing go.sum is kept, so reruns do not re-verify.
func writeScratchModule(srcDir string, c component, goTool string) error {
	if err := os.MkdirAll(srcDir, 0o755); err != nil {
		return err
	}
	tmpDir := os.TempDir()
	info, err := output(goTool, tmpDir, []string{"GOFLAGS=", "GOWORK=off"}, "mod", "download", "-json", c.module+"@"+c.version)
	if err != nil {
		return fmt.Errorf("go mod download %s@%s: %w", c.module, c.version, err)
	}
	var dl struct{ GoMod, Error string }
	if err := json.Unmarshal([]byte(info), &dl); err != nil {
		return err
	}
	if dl.Error != "" || dl.GoMod == "" {
		return fmt.Errorf("go mod download %s@%s: %s", c.module, c.version, dl.Error)
	}
	js, err := output(goTool, tmpDir, []string{"GOWORK=off"}, "mod", "edit", "-json", dl.GoMod)
	if err != nil {
		return fmt.Errorf("read %s: %w", dl.GoMod, err)
	}
	var mf modFile
	if err := json.Unmarshal([]byte(js), &mf); err != nil {
		return err
	}
	required := map[string]bool{}
	for _, r := range mf.Require {
		required[r.Path] = true
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Generated by csisim realkube/build; scratch module to build %s@%s.\n", c.module, c.version)
	fmt.Fprintf(&b, "module csisim.local/realkube-build/%s\n\n", c.group)
	goLine := mf.Go
	if goLine == "" {
		goLine = "1.26.0"
	}
	fmt.Fprintf(&b, "go %s\n\n", goLine)
	fmt.Fprintf(&b, "require %s %s\n\n", c.module, c.version)
	var reps []string
	for _, r := range mf.Replace {
		if r.New.Version != "" { // module => module@version: repeat verbatim
			old := r.Old.Path
			if r.Old.Version != "" {
				old += " " + r.Old.Version
			}
			reps = append(reps, fmt.Sprintf("%s => %s %s", old, r.New.Path, r.New.Version))
			continue
		}
		// Local directory replace: only for modules the upstream needs.
		if !required[r.Old.Path] {
			continue
		}
		v, err := publishedVersion(c, r.Old.Path)
		if err != nil {
			return err
		}
		if v == "" {
			continue // a sibling module the dependency requires at a real version already
		}
		reps = append(reps, fmt.Sprintf("%s => %s %s", r.Old.Path, r.Old.Path, v))
	}
	if len(reps) > 0 {
		b.WriteString("replace (\n")
		for _, r := range reps {
			b.WriteString("\t" + r + "\n")
		}
		b.WriteString(")\n")
	}
	gomod := filepath.Join(srcDir, "go.mod")
	if old, err := os.ReadFile(gomod); err == nil && bytes.Equal(old, b.Bytes()) {
		return nil
	}
	// Keep go.sum (hashes are content-addressed); rewrite go.mod.
	return os.WriteFile(gomod, b.Bytes(), 0o644)
}

// publishedVersion says which published version stands in for a directory
// replace of path in c's module. "" means: leave it to the requirement.
func publishedVersion(c component, path string) (string, error) {
	switch {
	case c.module == "k8s.io/kubernetes" && strings.HasPrefix(path, "k8s.io/"):
		// Staging modules are published as v0.<minor>.<patch>.
		return "v0" + strings.TrimPrefix(c.version, "v1"), nil
	case c.module == "github.com/kubernetes-csi/external-snapshotter/v8" && path == "github.com/kubernetes-csi/external-snapshotter/client/v8":
		return c.version, nil
	case c.module == "go.etcd.io/etcd/server/v3" && strings.HasPrefix(path, "go.etcd.io/etcd/"):
		// etcd's sibling modules are required at the same released version.
		return "", nil
	}
	return "", fmt.Errorf("%s@%s replaces %s with a directory; no published stand-in known", c.module, c.version, path)
}

func recordTime(cache string, c component, goVersion string, d time.Duration, buildErr error) {
	f, err := os.OpenFile(filepath.Join(cache, "build-times.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	result := "ok"
	if buildErr != nil {
		result = "FAILED"
	}
	fmt.Fprintf(f, "%s %-24s %-7s %6.0fs %s@%s %s\n", time.Now().UTC().Format(time.RFC3339), c.name, result, d.Seconds(), c.module, c.version, goVersion)
}

// lock takes the build lock of the cache. Another build holding it (a
// second checkout's, a helper's on-demand binary) is waited for, not
// failed on: each component is checked again once the lock is ours, so
// what the other build made is not made twice.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		fmt.Printf("realkube build: waiting for another build, which holds %s\n", path)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func output(name, dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
