package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leaveUnmountedVolumeDir makes what a kubelet leaves of a pod's volume
// whose NodeUnpublishVolume did its work but whose answer never came (the
// driver crashed before it answered, or the restart cut the call off): the
// volume directory and its vol_data.json, the mount gone. Returns the
// target.
func (e *env) leaveUnmountedVolumeDir(uid string) string {
	e.t.Helper()
	dir := filepath.Join(e.dir, "pods", uid, "volumes/kubernetes.io~csi", testPV)
	if err := os.MkdirAll(filepath.Join(dir, "mount"), 0o750); err != nil {
		e.t.Fatal(err)
	}
	if err := saveVolumeData(dir, map[string]string{"specVolID": testPV, "volumeHandle": testHandle, "driverName": testDriver}); err != nil {
		e.t.Fatal(err)
	}
	return filepath.Join(dir, "mount")
}

// A pod being deleted when the kubelet restarts, whose volume's
// NodeUnpublishVolume was not confirmed and whose mount is gone: the
// volume cannot be reconstructed, and the populator does not want the
// volumes of a pod being deleted, so the clean-up of what failed
// reconstruction unpublishes it (the real reconciler's cleanOrphanVolumes
// asks the desired state, not whether the pod exists) — whether the pod's
// own sync has let it go from the API before or not. Seed 63 of the
// kubelet-subpath nemesis sweep: without it the pod went, its publish
// never undone, and the volume was unstaged, detached and deleted under it.
func TestRestartUnpublishesFailedVolumeOfDeletedPod(t *testing.T) {
	for _, podFirst := range []bool{false, true} {
		name := "clean-up first"
		if podFirst {
			name = "pod's sync first"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOptions{caps: stageCaps(), mountCheck: true})
			target := e.leaveUnmountedVolumeDir("uid-1")
			e.markDeleted()
			if err := e.k.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := len(e.k.actual.pods()); n != 0 {
				t.Fatalf("an unmounted volume was reconstructed: %d pods", n)
			}
			if podFirst {
				// Terminating, then terminated: nothing of it in the
				// actual state, the status manager deletes it.
				for range 2 {
					if err := e.sync("default/app"); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := e.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("the pod is still in the API: %v", err)
				}
			}
			if err := e.sync(orphansKey); err != nil {
				t.Fatal(err)
			}
			if got := e.node.lifecycle(); !slices.Equal(got, []string{"NodeUnpublishVolume"}) {
				t.Fatalf("calls = %v, want one NodeUnpublishVolume", got)
			}
			if got := e.node.unpub[0].GetTargetPath(); got != target {
				t.Errorf("unpublished %s, want %s", got, target)
			}
		})
	}
}

// A raw block volume whose NodeUnpublishVolume is not confirmed when the
// kubelet restarts (the driver crashed before it answered) is forgotten,
// as a real v1.37 kubelet forgets it: UnmapVolume removes the pod's device
// link (UnmapBlockVolume) before it calls NodeUnpublishVolume
// (UnmapPodDevice; kubernetes pkg/volume/util/operationexecutor/
// operation_generator.go, GenerateUnmapVolumeFunc), and reconstruction
// finds a block volume only through that link (reconstruct_common.go,
// getVolumesFromPodDir and reconstructVolume's check of the link); nothing
// finds the staging through the plugin's directory before
// CSIGlobalMountReconstruction (KEP-6058, alpha in v1.38). So the new
// kubelet neither unpublishes nor unstages it, lets the pod go, and stops
// reporting the volume in use: the attach/detach controller detaches it,
// still staged (expansion-block, nemesis seed 63). Kubernetes leaves it;
// csi-call-order and nothing-leaked report it, naming the restart.
func TestRestartForgetsBlockVolumeWhoseUnpublishWasLost(t *testing.T) {
	e := newEnv(t, envOptions{caps: stageCaps(), block: true})
	e.runningPod()
	link := filepath.Join(e.dir, "pods/uid-1/volumeDevices/kubernetes.io~csi", testPV)
	e.node.unpubErr = status.Error(codes.Unavailable, "error reading from server: EOF")
	e.markDeleted()
	_ = e.sync("default/app") // terminating: the containers stop
	if err := e.sync("default/app"); err == nil {
		t.Fatal("the unmap succeeded although NodeUnpublishVolume failed")
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Fatalf("the pod's device link is still there after the unmap began: %v", err)
	}
	calls := len(e.node.lifecycle())

	if err := e.k.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pods, staged := e.k.actual.pods(), e.k.actual.stagedVolumes(); len(pods) != 0 || len(staged) != 0 {
		t.Fatalf("reconstructed pods %v, staged %v: the real kubelet finds neither", pods, staged)
	}
	e.node.unpubErr = nil
	for _, key := range []string{"default/app", "default/app", orphansKey} {
		if err := e.sync(key); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
	e.syncDevices()
	if got := e.node.lifecycle()[calls:]; len(got) != 0 {
		t.Errorf("CSI calls after the restart: %v, want none", got)
	}
	if _, err := e.client.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still in the API: %v", err)
	}
	if got := e.k.volumesInUse(); len(got) != 0 {
		t.Errorf("volumesInUse %v, want none", got)
	}
}
