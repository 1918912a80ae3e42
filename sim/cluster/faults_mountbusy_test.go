package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
)

// openUnder are this process's open files under dir.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			out = append(out, target)
		}
	}
	return out
}

// TestMountBusyLetGoAtClose: mount-busy holds an open directory in the
// pod's subPath bind mount; a pod that is not there is an error in the
// step's words; a run that ends while the mount is held lets it go, so
// that its clean-up unmounts everything and leaves no file open.
func TestMountBusyLetGoAtClose(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{Nodes: nodeNames(1), DriverBinary: csisimBinary, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := provisionClaims(ctx, c, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "app"}}}},
		Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.RunUntil(ctx, 2*time.Minute, func() (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		t.Fatal(err)
	}

	busy := fault.Fault{Kind: fault.MountBusy, Busy: fault.Busy{Pod: "nope", Volume: "data", For: time.Hour}}
	if err := c.InjectFault(ctx, busy); err == nil || err.Error() != `pod default/nope: pods "nope" not found` {
		t.Errorf("mount-busy of a pod that is not there: %v", err)
	}
	busy.Busy.Pod = "app"
	if err := c.InjectFault(ctx, busy); err != nil {
		t.Fatal(err)
	}
	root := c.Root()
	held := openUnder(t, root)
	if len(held) != 1 || !strings.Contains(held[0], "/volume-subpaths/") {
		t.Fatalf("open under the run's root: %v, want the subPath bind mount", held)
	}
	c.busy.mu.Lock()
	var files []*os.File
	for _, f := range c.busy.held {
		files = append(files, f)
	}
	c.busy.mu.Unlock()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("closing the cluster with a mount held busy: %v", err)
	}
	// A mount detached lazily leaves the file open under another name:
	// the holder itself must be closed.
	for _, f := range files {
		if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("the holder %s is still open after Close (%v)", f.Name(), err)
		}
	}
	if left := openUnder(t, root); len(left) != 0 {
		t.Errorf("still open after Close: %v", left)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %s: its clean-up waited for a busy mount", d)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the run's root after Close: %v, want it gone", err)
	}
}
