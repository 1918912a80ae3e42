package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

func TestRunRestorePutsBackWhatItChanged(t *testing.T) {
	s := mustParse(t, `steps:
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: d}, spec: {podInfoOnMount: false}}
        ---
        {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: made}, provisioner: d}
        ---
        {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}}
  - apply:
      manifest: |
        {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: d}, spec: {podInfoOnMount: false, fsGroupPolicy: File}}
  - delete: {object: storageclass/deployed}
`)
	for _, restore := range []bool{false, true} {
		cluster := newFakeCluster(clock.RealClock{})
		ctx := context.Background()
		deployed := []struct {
			gvr schema.GroupVersionResource
			obj map[string]any
		}{
			{csiDriversGVR, map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": map[string]any{"name": "d", "labels": map[string]any{"a": "b"}}, "spec": map[string]any{"podInfoOnMount": true}}},
			{storageClassesGVR, map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": map[string]any{"name": "deployed"}, "provisioner": "d"}},
		}
		for _, o := range deployed {
			if _, err := cluster.client.Resource(o.gvr).Create(ctx, &unstructured.Unstructured{Object: o.obj}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := (&Runner{Backend: fakeBackend{}, Namespace: "default", Restore: restore}).run(ctx, s, cluster.objects)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Passed() {
			t.Fatalf("restore=%v: not passed: %+v", restore, r.Steps)
		}
		d, err := cluster.client.Resource(csiDriversGVR).Get(ctx, "d", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podInfo, _, _ := unstructured.NestedBool(d.Object, "spec", "podInfoOnMount")
		_, hasPolicy, _ := unstructured.NestedString(d.Object, "spec", "fsGroupPolicy")
		_, madeErr := cluster.client.Resource(storageClassesGVR).Get(ctx, "made", metav1.GetOptions{})
		_, deployedErr := cluster.client.Resource(storageClassesGVR).Get(ctx, "deployed", metav1.GetOptions{})
		_, pvcErr := cluster.client.Resource(pvcsGVR).Namespace("default").Get(ctx, "data", metav1.GetOptions{})
		if restore {
			if !podInfo || hasPolicy || d.GetLabels()["a"] != "b" {
				t.Errorf("the CSIDriver was not put back: %v", d.Object)
			}
			if madeErr == nil {
				t.Error("the StorageClass the run made is still there")
			}
			if deployedErr != nil {
				t.Errorf("the StorageClass the run deleted was not made again: %v", deployedErr)
			}
		} else if podInfo || madeErr != nil || deployedErr == nil {
			t.Errorf("without Restore the run's changes stay: podInfoOnMount %v, made %v, deployed %v", podInfo, madeErr, deployedErr)
		}
		// The run's own namespace is not the borrowed objects' business.
		if pvcErr != nil {
			t.Errorf("restore=%v: the claim in the run's namespace was touched: %v", restore, pvcErr)
		}
	}
}

// undoRecorder is a shared-cluster backend that records the context its
// faults are undone with.
type undoRecorder struct {
	fakeBackend
	err *error
}

func (b undoRecorder) UndoFaults(ctx context.Context) error {
	*b.err = ctx.Err()
	return nil
}

// A run whose context ends (the e2e suite's per-scenario deadline) still
// puts the cluster back: a node it stopped, left down, would fail every
// run after it on the shared cluster.
func TestRunPutsBackAfterItsContextEnded(t *testing.T) {
	s := mustParse(t, `steps:
  - sleep: 1h
`)
	cluster := newFakeCluster(clock.RealClock{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	undoErr := errors.New("not called")
	_, err := (&Runner{Backend: undoRecorder{err: &undoErr}, Namespace: "default", Restore: true}).run(ctx, s, cluster.objects)
	if err == nil {
		t.Fatal("a sleep past the run's deadline passed")
	}
	if undoErr != nil {
		t.Errorf("the faults were undone with a context that had ended: %v", undoErr)
	}
}

// On a shared cluster (SkipUnsupported) a scenario deployed from its own
// manifests is skipped, saying why, not an error of the suite.
func TestRunSkipsDeployElsewhereWhenSkippingUnsupported(t *testing.T) {
	sc := &Scenario{Name: "s", Cluster: Cluster{Deploy: "lib/deploy-x"}, Steps: []Step{{}}}
	res, err := (&Runner{Backend: noDeployBackend{}, SkipUnsupported: true}).Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Skipped, "its cluster is deployed from lib/deploy-x (cluster.deploy)") {
		t.Errorf("skipped: %q", res.Skipped)
	}
}

// On a shared cluster a step that counts a volume kind counts the run's
// own: a volume another run left (still being deleted) is not the run's.
func TestRunCountsOnlyItsOwnVolumesOnASharedCluster(t *testing.T) {
	s := mustParse(t, `steps:
  - wait: {object: persistentvolumes, count: 0, timeout: 1s}
`)
	for _, restore := range []bool{false, true} {
		cluster := newFakeCluster(clock.RealClock{})
		ctx := context.Background()
		pv := map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pvc-other", "uid": "u-other"}}
		if _, err := cluster.client.Resource(pvsGVR).Create(ctx, &unstructured.Unstructured{Object: pv}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r, err := (&Runner{Backend: fakeBackend{}, Namespace: "default", Restore: restore}).run(ctx, s, cluster.objects)
		if restore && (err != nil || !r.Passed()) {
			t.Errorf("shared cluster: another run's volume was counted: %v", err)
		}
		if !restore && err == nil {
			t.Error("a cluster of the run's own: its one volume was not counted")
		}
	}
}
