package apitest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapshotclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
)

// snapshotKinds checks the snapshot CRDs' schema rules and status
// subresource through the external-snapshotter clientset.
func snapshotKinds(t *testing.T, e *env) {
	if !e.target.SnapshotCRDs {
		t.Skip("the target does not serve the snapshot CRDs")
	}
	cs, err := snapshotclient.NewForConfig(e.target.Config)
	if err != nil {
		t.Fatal(err)
	}
	snaps := cs.SnapshotV1().VolumeSnapshots(e.ns)
	pvc := "data"
	snap := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: &pvc},
			VolumeSnapshotClassName: ptr("apitest-none")}}
	created, err := snaps.Create(e.ctx, snap, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 1 {
		t.Errorf("custom resource generation = %d, want 1", created.Generation)
	}
	created.Status = &snapshotv1.VolumeSnapshotStatus{ReadyToUse: ptr(true)}
	updated, err := snaps.UpdateStatus(e.ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Status == nil || updated.Status.ReadyToUse == nil || !*updated.Status.ReadyToUse {
		t.Errorf("status = %+v, want readyToUse", updated.Status)
	}
	updated.Spec.Source.PersistentVolumeClaimName = ptr("other")
	if _, err := snaps.Update(e.ctx, updated, metav1.UpdateOptions{}); err == nil {
		t.Error("changing an immutable snapshot source was accepted")
	}
	bad := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s2"}}
	if _, err := snaps.Create(e.ctx, bad, metav1.CreateOptions{}); err == nil {
		t.Error("a snapshot without a source was accepted")
	}
}
