package snapshotcontroller

import (
	"context"
	"slices"
	"strings"
	"testing"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// syncGroupUntilStill syncs the group until a sync writes nothing more,
// feeding what each wrote back into the caches, as the informers do.
func (h *harness) syncGroupUntilStill(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for range 6 {
		before := h.writes()
		if err := h.c.syncGroupByKey(ctx, "default/web-snaps"); err != nil {
			t.Fatal(err)
		}
		if err := h.c.syncGroupContentByKey(ctx, "groupsnapcontent-g-uid"); err != nil {
			t.Fatal(err)
		}
		g, err := h.snaps.GroupsnapshotV1().VolumeGroupSnapshots("default").Get(ctx, "web-snaps", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		objs := []runtime.Object{g}
		if gc, err := h.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, "groupsnapcontent-g-uid", metav1.GetOptions{}); err == nil {
			objs = append(objs, gc)
		}
		for _, o := range objs {
			if err := h.cache(o); err != nil {
				t.Fatal(err)
			}
		}
		if h.writes() == before {
			return
		}
	}
	t.Fatal("the group's syncs never settle")
}

// writes counts the writes the clients saw, reads left out.
func (h *harness) writes() int {
	n := 0
	for _, a := range append(h.snaps.Actions(), h.kube.Actions()...) {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			n++
		}
	}
	return n
}

// A group snapshot of the claims its selector picks: the default class of
// their driver, the content groupsnapcontent-<uid> with their volume
// handles; once the csi-snapshotter has cut the group, a member snapshot
// and content per volume, and the group ready.
func TestGroupSnapshotContentAndMembers(t *testing.T) {
	ctx := context.Background()
	pvc := claim(corev1.ClaimBound)
	pvc.Labels = map[string]string{"app": "web"}
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}}
	groupClass := &groupsnapv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "gc",
		Annotations: map[string]string{isDefaultGroupSnapshotClassAnnotation: "true"}}, Driver: "drv", DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	g := &groupsnapv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "web-snaps", Namespace: "default", UID: "g-uid"},
		Spec: groupsnapv1.VolumeGroupSnapshotSpec{Source: groupsnapv1.VolumeGroupSnapshotSource{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}
	h := newHarness(t, pvc, other, volume, groupClass, g)
	h.syncGroupUntilStill(t)
	content, err := h.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, "groupsnapcontent-g-uid", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(content.Spec.Source.VolumeHandles, []string{"vol-1"}) || *content.Spec.VolumeGroupSnapshotClassName != "gc" ||
		content.Spec.VolumeGroupSnapshotRef.UID != "g-uid" || content.Spec.Driver != "drv" ||
		!slices.Contains(content.Finalizers, volumeGroupSnapshotContentFinalizer) {
		t.Fatalf("content %+v", content)
	}
	if ev := h.recorded(); !slices.Contains(ev, "Normal CreatingGroupSnapshot Waiting for a group snapshot default/web-snaps to be created by the CSI driver.") {
		t.Fatalf("events %q", ev)
	}

	// What the csi-snapshotter writes once CreateVolumeGroupSnapshot
	// answered.
	handle, ready, created, size := "group-1", true, int64(1e18), int64(1<<30)
	content.Status = &groupsnapv1.VolumeGroupSnapshotContentStatus{VolumeGroupSnapshotHandle: &handle, ReadyToUse: &ready,
		CreationTime: &metav1.Time{}, VolumeSnapshotInfoList: []groupsnapv1.VolumeSnapshotInfo{
			{VolumeHandle: "vol-1", SnapshotHandle: "snap-1", CreationTime: &created, ReadyToUse: &ready, RestoreSize: &size}}}
	if content, err = h.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().UpdateStatus(ctx, content, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.cache(content); err != nil {
		t.Fatal(err)
	}
	h.syncGroupUntilStill(t)
	snapName, contentName := memberNames(g, "vol-1")
	member, err := h.snaps.SnapshotV1().VolumeSnapshots("default").Get(ctx, snapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if groupOwner(member) != "web-snaps" || !slices.Equal(member.Finalizers, []string{VolumeSnapshotInGroupFinalizer}) ||
		*member.Spec.Source.PersistentVolumeClaimName != "data" || *member.Status.BoundVolumeSnapshotContentName != contentName {
		t.Fatalf("member snapshot %+v", member)
	}
	mc, err := h.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mc.Annotations[VolumeGroupSnapshotHandleAnnotation] != "group-1" || *mc.Status.SnapshotHandle != "snap-1" ||
		*mc.Status.VolumeGroupSnapshotHandle != "group-1" || mc.Spec.VolumeSnapshotRef.UID != member.UID || *mc.Status.RestoreSize != size {
		t.Fatalf("member content %+v", mc)
	}
	got, err := h.snaps.GroupsnapshotV1().VolumeGroupSnapshots("default").Get(ctx, "web-snaps", metav1.GetOptions{})
	if err != nil || !isGroupReady(got) || !slices.Contains(got.Finalizers, volumeGroupSnapshotBoundFinalizer) {
		t.Fatalf("group %+v, %v", got, err)
	}
	if ev := strings.Join(h.recorded(), "\n"); !strings.Contains(ev, "GroupSnapshotCreated") || !strings.Contains(ev, "Normal GroupSnapshotReady GroupSnapshot default/web-snaps is ready to use.") {
		t.Fatalf("events %s", ev)
	}
}

// A member's deletion waits for its group's: SnapshotDeletePending while
// the group exists, the in-group finalizer may go once it is gone.
func TestMemberDeletionWaitsForTheGroup(t *testing.T) {
	name := "web-snaps"
	member := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"},
		Status: &snapv1.VolumeSnapshotStatus{VolumeGroupSnapshotName: &name}}
	g := &groupsnapv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	h := newHarness(t, g)
	if remove, err := h.c.checkMemberDeletion(member); err == nil || remove {
		t.Fatalf("member of an existing group: remove %v, %v", remove, err)
	}
	if ev := h.recorded(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning SnapshotDeletePending deletion of the individual volume snapshot default/m is not allowed as it belongs to group snapshot default/web-snaps.") {
		t.Fatalf("events %q", ev)
	}
	h = newHarness(t)
	if remove, err := h.c.checkMemberDeletion(member); err != nil || !remove {
		t.Fatalf("member of a group that is gone: remove %v, %v", remove, err)
	}
}
