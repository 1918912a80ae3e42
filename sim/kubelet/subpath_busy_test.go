package kubelet

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/attachdetach"
)

// terminate deletes the pod gracefully and runs the kubelet's terminating
// sync: its containers stop, its volumes are to be torn down.
func (e *env) terminate() {
	e.t.Helper()
	e.markDeleted()
	if err := e.sync("default/app"); err != nil {
		e.t.Fatalf("terminating sync: %v", err)
	}
	e.waitForPhase(corev1.PodSucceeded)
}

// TestSubPathBusyTeardown: a process holds an open directory inside a
// pod's subPath bind mount when the pod is deleted. The kubelet's subpath
// clean-up fails with EBUSY in the real kubelet's words, NodeUnpublishVolume
// is not called, no event is sent, and the unmount is tried again after
// the operation executor's backoff (0.5 s doubling); once the holder goes,
// the next try cleans the subpath mount and unpublishes.
func TestSubPathBusyTeardown(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test bind-mounts and needs root, as csisim's driver does")
	}
	c := &corev1.Container{Name: "app", Image: "busybox",
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "app"}}}
	e := newEnv(t, envOptions{caps: stageCaps(), mountCheck: true, container: c})
	t.Cleanup(func() { unmountAllUnder(t, e.dir) })
	e.runningPod()

	sub := SubPathTarget(e.dir, e.pod.UID, testPV, "app", 0)
	path, isSub, err := e.k.VolumeMountPath(e.apiPod(), "data")
	if err != nil || path != sub || !isSub {
		t.Fatalf("VolumeMountPath = %q, %v, %v; want %q, true", path, isSub, err, sub)
	}
	holder, err := os.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })

	e.terminate()
	eventsBefore := len(e.events()) // Killing
	var waits []time.Duration
	for range 4 {
		err := e.sync("default/app")
		d, ok := requeuedAfter(err)
		if !ok {
			t.Fatalf("sync with the subpath mount busy: %v, want it tried again later", err)
		}
		waits = append(waits, d)
		if !errors.Is(err, unix.EBUSY) {
			t.Errorf("error %v, want EBUSY in its chain", err)
		}
		unique := string(attachdetach.UniqueVolumeName(testDriver, testHandle))
		want := `error cleaning subPath mounts for volume "` + unique + `" (UniqueName: "` + unique + `") pod "` + string(e.pod.UID) +
			`" (UID: "` + string(e.pod.UID) + `") : error processing ` + e.dir + "/pods/" + string(e.pod.UID) + "/volume-subpaths/" + testPV +
			"/app: error cleaning subpath mount " + sub + ": unmount failed: exit status 32\nUnmounting arguments: " + sub +
			"\nOutput: umount: " + sub + ": target is busy.\n (requeue after " + d.String() + ")"
		if err.Error() != want {
			t.Errorf("error\n%q\nwant\n%q", err.Error(), want)
		}
		// A sync before the backoff has passed does not try.
		if d2, ok := requeuedAfter(e.sync("default/app")); !ok || d2 != d {
			t.Errorf("a sync within the backoff: %v, %v; want it to wait %v", d2, ok, d)
		}
		e.clock.Step(d)
	}
	if want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(waits, want) {
		t.Errorf("backoffs %v, want %v", waits, want)
	}
	if slices.Contains(e.node.lifecycle(), "NodeUnpublishVolume") {
		t.Errorf("NodeUnpublishVolume called with a subpath mount left: %v", e.node.lifecycle())
	}
	if got := mountsUnder(t, e.dir); !slices.Contains(got, sub) {
		t.Errorf("mounts %v, want the busy %s still there", got, sub)
	}
	if got := e.events(); len(got) != eventsBefore {
		t.Errorf("events %v: the unmount operation records none", got[eventsBefore:])
	}

	if p := e.apiPod(); p.DeletionTimestamp == nil {
		t.Error("the pod went from the API with its subpath mount left")
	}

	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.sync("default/app"); err != nil {
		t.Fatalf("sync once the holder has gone: %v", err)
	}
	if n := len(e.node.unpub); n != 1 {
		t.Errorf("NodeUnpublishVolume called %d times, want 1", n)
	}
	if got := mountsUnder(t, e.dir); len(got) != 0 {
		t.Errorf("left mounted: %v", got)
	}
}

// TestTearDownFailedWords: a NodeUnpublishVolume that fails is the
// operation generator's "UnmountVolume.TearDown failed" with the CSI
// plugin's words, and leaves the volume maybe published.
func TestTearDownFailedWords(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps()})
	e.runningPod()
	// Without a subPath the mount the container sees is the publish
	// target; without real mounts there is none to hold.
	if path, isSub, err := e.k.VolumeMountPath(e.apiPod(), "data"); err == nil || path != "" || isSub {
		t.Errorf("VolumeMountPath without real mounts = %q, %v, %v; want an error", path, isSub, err)
	}
	e.k.cfg.SkipMountCheck = false
	if path, isSub, err := e.k.VolumeMountPath(e.apiPod(), "data"); err != nil || path != PublishPath(e.dir, e.pod.UID, testPV) || isSub {
		t.Errorf("VolumeMountPath = %q, %v, %v; want the publish target", path, isSub, err)
	}
	e.node.unpubErr = status.Error(codes.Internal, "unmount: device or resource busy")
	e.terminate()
	err := e.sync("default/app")
	if _, ok := requeuedAfter(err); !ok {
		t.Fatalf("sync: %v, want it tried again later", err)
	}
	unique := string(attachdetach.UniqueVolumeName(testDriver, testHandle))
	want := `UnmountVolume.TearDown failed for volume "` + unique + `" (UniqueName: "` + unique + `") pod "` + string(e.pod.UID) +
		`" (UID: "` + string(e.pod.UID) + `") : kubernetes.io/csi: Unmounter.TearDownAt failed: rpc error: code = Internal desc = unmount: device or resource busy (requeue after 500ms)`
	if err.Error() != want {
		t.Errorf("error\n%q\nwant\n%q", err.Error(), want)
	}
	if m := e.k.actual.mountedVolume(e.pod.UID, testPV); m == nil || !m.uncertain {
		t.Errorf("mounted volume %+v, want it kept, uncertain", m)
	}
}
