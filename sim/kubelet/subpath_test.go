package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

func TestCheckSubPath(t *testing.T) {
	for _, tc := range []struct {
		subPath, err string
	}{
		{subPath: "logs"},
		{subPath: "a/b/c"},
		{subPath: "a..b"},
		{subPath: "./a"},
		{subPath: "/abs", err: "error SubPath `/abs` must not be an absolute path"},
		{subPath: "..", err: "unable to provision SubPath `..`: must not contain '..'"},
		{subPath: "a/../../b", err: "unable to provision SubPath `a/../../b`: must not contain '..'"},
	} {
		err := checkSubPath(tc.subPath)
		if got := errString(err); got != tc.err {
			t.Errorf("checkSubPath(%q) = %q, want %q", tc.subPath, got, tc.err)
		}
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"POD": "app-0", "NS": "default", "EMPTY": ""}
	for _, tc := range []struct {
		expr, want, err string
	}{
		{expr: "$(POD)", want: "app-0"},
		{expr: "logs/$(NS)/$(POD)", want: "logs/default/app-0"},
		{expr: "cost$$1/$(POD)", want: "cost$1/app-0"},
		{expr: "a$b", want: "a$b"},
		{expr: "open$(POD", want: "open$(POD"},
		{expr: "$(MISSING)/$(EMPTY)/$(MISSING)", err: "missing value for EMPTY, MISSING"},
	} {
		got, err := expandSubPathExpr(tc.expr, env)
		if got != tc.want || errString(err) != tc.err {
			t.Errorf("expandSubPathExpr(%q) = %q, %q; want %q, %q", tc.expr, got, errString(err), tc.want, tc.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// mountsUnder are the mount points under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	slices.Sort(out)
	return out
}

// unmountAllUnder leaves no mount behind a failed test.
func unmountAllUnder(t *testing.T, dir string) {
	for _, m := range slices.Backward(mountsUnder(t, dir)) {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
}

// TestSubPathBindMounts runs a pod whose container mounts its volume
// twice with a subPath and a subPathExpr, with real bind mounts: the
// directories are made inside the volume, bind-mounted under the pod's
// volume-subpaths directory, and unmounted and removed before
// NodeUnpublishVolume when the pod goes.
func TestSubPathBindMounts(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test bind-mounts and needs root, as csisim's driver does")
	}
	c := &corev1.Container{Name: "app", Image: "busybox",
		Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/logs", SubPath: "logs/app"},
			{Name: "data", MountPath: "/mine", SubPathExpr: "pods/$(POD)"}, {Name: "data", MountPath: "/data"}}}
	e := newEnv(t, envOptions{caps: stageCaps(), mountCheck: true, container: c})
	t.Cleanup(func() { unmountAllUnder(t, e.dir) })
	e.runningPod()

	target := PublishPath(e.dir, e.pod.UID, testPV)
	// Named after the PV, the claim's inner volume spec name.
	want := []string{SubPathTarget(e.dir, e.pod.UID, testPV, "app", 0), SubPathTarget(e.dir, e.pod.UID, testPV, "app", 1)}
	if got := mountsUnder(t, e.dir); !slices.Equal(got, want) {
		t.Fatalf("mounts %v, want %v", got, want)
	}
	for _, sub := range []string{"logs/app", "pods/app"} {
		if st, err := os.Stat(filepath.Join(target, sub)); err != nil || !st.IsDir() {
			t.Errorf("subPath %s not made in the volume: %v", sub, err)
		}
	}
	// What the container writes through its mount lands in the volume.
	if err := os.WriteFile(filepath.Join(want[1], "hello"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "pods/app/hello")); err != nil || string(b) != "hi" {
		t.Errorf("file through the subPath mount: %q, %v", b, err)
	}
	// A second start (a sync that finds them mounted) mounts nothing more.
	if err := e.k.makeContainerMounts(t.Context(), e.apiPod(), c, "10.88.0.2"); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(t, e.dir); !slices.Equal(got, want) {
		t.Fatalf("mounts after a second start %v, want %v", got, want)
	}

	var atUnpublish []string
	e.node.onUnpublish = func(*csi.NodeUnpublishVolumeRequest) { atUnpublish = mountsUnder(t, e.dir) }
	e.deletePod()
	if len(atUnpublish) != 0 {
		t.Errorf("mounted when NodeUnpublishVolume was called: %v (the subpaths are cleaned first)", atUnpublish)
	}
	if got := mountsUnder(t, e.dir); len(got) != 0 {
		t.Errorf("left mounted: %v", got)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pods", string(e.pod.UID))); !os.IsNotExist(err) {
		t.Errorf("pod directory left: %v", err)
	}
}

// TestSubPathOutOfVolume: a symlink in the volume cannot lead a subPath
// out of it, neither to make a directory nor to bind-mount one.
func TestSubPathOutOfVolume(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test bind-mounts and needs root, as csisim's driver does")
	}
	kubeletDir, vol, outside := t.TempDir(), t.TempDir(), t.TempDir()
	t.Cleanup(func() { unmountAllUnder(t, kubeletDir) })
	if err := os.Symlink(outside, filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"escape", "escape/new"} {
		_, err := prepareSubPath(kubeletDir, "uid-1", subPathMount{volumePath: vol, subPath: sub, volume: "pv-1", mount: "data", container: "app"})
		if err == nil || !strings.Contains(err.Error(), `subPath directory for volumeMount "data" of container "app"`) &&
			!strings.Contains(err.Error(), `failed to prepare subPath for volumeMount "data" of container "app"`) {
			t.Errorf("subPath %s: %v, want it refused", sub, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !os.IsNotExist(err) {
		t.Errorf("a directory was made out of the volume: %v", err)
	}
	if got := mountsUnder(t, kubeletDir); len(got) != 0 {
		t.Errorf("mounted: %v", got)
	}
	// A file subPath is bind-mounted onto a file.
	if err := os.WriteFile(filepath.Join(vol, "conf"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	target, err := prepareSubPath(kubeletDir, "uid-1", subPathMount{volumePath: vol, subPath: "conf", volume: "pv-1", mount: "data", container: "app", index: 3})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Errorf("file subPath at %s: %q, %v", target, b, err)
	}
	if err := cleanSubPaths(kubeletDir, "uid-1", "pv-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(kubeletDir, "pods", "uid-1", subPathsDirName)); !os.IsNotExist(err) {
		t.Errorf("volume-subpaths left: %v", err)
	}
}

// TestSubPathRefused: a subPathExpr that expands to an absolute path, to
// one with "..", or that names a variable without a value keeps the
// container from starting, in the real kubelet's words: a Failed event
// "Error: ...", the container waiting CreateContainerConfigError, the pod
// Pending with its sandbox; the pod worker tries again after its backoff.
func TestSubPathRefused(t *testing.T) {
	for _, tc := range []struct {
		value, expr, want string
	}{
		{value: "/etc", expr: "$(DIR)", want: "error SubPath `/etc` must not be an absolute path"},
		{value: "../../etc", expr: "x/$(DIR)", want: "unable to provision SubPath `x/../../etc`: must not contain '..'"},
		{value: "ok", expr: "$(NOPE)", want: "missing value for NOPE"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			c := &corev1.Container{Name: "app", Image: "busybox", Env: []corev1.EnvVar{{Name: "DIR", Value: tc.value}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPathExpr: tc.expr}}}
			e := newEnv(t, envOptions{caps: stageCaps(), container: c})
			var err error
			for range 10 {
				if err = e.sync("default/app"); e.apiPod().Status.PodIP != "" {
					break
				}
				d, ok := requeuedAfter(err)
				if !ok {
					t.Fatalf("sync: %v", err)
				}
				e.clock.Step(d)
			}
			// Tried again at PLEG's next relist, then after the backoff.
			if d, ok := requeuedAfter(err); !ok || d != plegRelistPeriod {
				t.Fatalf("sync: %v, want it tried again after %v", err, plegRelistPeriod)
			}
			if d, ok := requeuedAfter(e.sync("default/app")); !ok || d != plegRelistPeriod {
				t.Errorf("a sync before then: %v, %v; want it to wait", d, ok)
			}
			e.clock.Step(plegRelistPeriod)
			if d, ok := requeuedAfter(e.sync("default/app")); !ok || d != podWorkerBackOff {
				t.Errorf("second try: %v, want the next after %v", d, podWorkerBackOff)
			}
			st := e.apiPod().Status
			if st.Phase != corev1.PodPending || len(st.ContainerStatuses) != 1 {
				t.Fatalf("status %+v, want Pending with one container", st)
			}
			w := st.ContainerStatuses[0].State.Waiting
			if w == nil || w.Reason != reasonCreateContainerConfigError || w.Message != tc.want {
				t.Errorf("container state %+v, want waiting %s: %s", st.ContainerStatuses[0].State, reasonCreateContainerConfigError, tc.want)
			}
			var failed []string
			for _, ev := range e.events() {
				if ev.Reason == "Failed" {
					failed = append(failed, fmt.Sprintf("%s %s %s (%d)", ev.Type, ev.InvolvedObject.FieldPath, ev.Message, ev.Count))
				}
			}
			if want := []string{"Warning spec.containers{app} Error: " + tc.want + " (2)"}; !slices.Equal(failed, want) {
				t.Errorf("Failed events %q, want %q", failed, want)
			}
		})
	}
}
