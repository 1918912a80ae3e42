package snapshotcontroller

// The members of a group snapshot: once the csi-snapshotter has cut the
// group (the content's status lists a snapshot per volume), one
// VolumeSnapshotContent and VolumeSnapshot per member, bound to each other
// and carrying the member's snapshot handle, as
// createSnapshotsForGroupSnapshotContent does; and what the single
// snapshot path does differently for a member (snapshot_controller.go).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/volumeutil"
)

// memberNames are the names of a member's snapshot and content
// (getSnapshotNameForVolumeGroupSnapshotContent and its content twin).
func memberNames(g *groupsnapv1.VolumeGroupSnapshot, volumeHandle string) (snapshot, content string) {
	sum := sha256.Sum256([]byte(string(g.UID) + volumeHandle))
	return fmt.Sprintf("snapshot-%x", sum), fmt.Sprintf("snapcontent-%x", sum)
}

// createMembers makes each member's content and snapshot, binds them and
// writes the content's status; every step is create-or-get, so a sync cut
// short goes on where it stopped.
func (c *Controller) createMembers(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, g *groupsnapv1.VolumeGroupSnapshot) error {
	st := content.Status
	if st == nil || len(st.VolumeSnapshotInfoList) == 0 || st.VolumeGroupSnapshotHandle == nil {
		return nil
	}
	for _, info := range st.VolumeSnapshotInfoList {
		if err := c.createMember(ctx, info, content, g); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) createMember(ctx context.Context, info groupsnapv1.VolumeSnapshotInfo, gc *groupsnapv1.VolumeGroupSnapshotContent, g *groupsnapv1.VolumeGroupSnapshot) error {
	pv := c.volumeByHandle(gc.Spec.Driver, info.VolumeHandle)
	snapName, contentName := memberNames(g, info.VolumeHandle)
	handle := info.VolumeHandle
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: contentName,
			Annotations: map[string]string{VolumeGroupSnapshotHandleAnnotation: *gc.Status.VolumeGroupSnapshotHandle}},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", Name: snapName, Namespace: gc.Spec.VolumeGroupSnapshotRef.Namespace},
			DeletionPolicy:    gc.Spec.DeletionPolicy,
			Driver:            gc.Spec.Driver,
			Source:            snapv1.VolumeSnapshotContentSource{VolumeHandle: &handle},
		},
	}
	claim := ""
	if pv != nil {
		content.Spec.SourceVolumeMode = pv.Spec.VolumeMode
		if pv.Spec.ClaimRef != nil {
			claim = pv.Spec.ClaimRef.Name
		}
	}
	snapshot := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: snapName, Namespace: content.Spec.VolumeSnapshotRef.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: groupsnapv1.SchemeGroupVersion.String(), Kind: "VolumeGroupSnapshot", Name: g.Name, UID: g.UID}},
			Finalizers:      []string{VolumeSnapshotInGroupFinalizer}},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: &claim}},
	}
	createdContent, err := c.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, content, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		createdContent, err = c.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("createIndividualSnapshotForGroupSnapshot: creating volumesnapshotcontent %w", err)
	}
	createdSnapshot, err := c.snaps.SnapshotV1().VolumeSnapshots(snapshot.Namespace).Create(ctx, snapshot, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		createdSnapshot, err = c.snaps.SnapshotV1().VolumeSnapshots(snapshot.Namespace).Get(ctx, snapName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("createIndividualSnapshotForGroupSnapshot: error creating or fetching volumesnapshot %w", err)
	}
	if _, err := c.patchContent(ctx, createdContent, []patchOp{{Op: "replace", Path: "/spec/volumeSnapshotRef/uid", Value: createdSnapshot.UID}}); err != nil {
		return fmt.Errorf("createIndividualSnapshotForGroupSnapshot: binding volumesnapshotcontent to volumesnapshot %w", err)
	}
	if _, err := c.patchSnapshotStatus(ctx, createdSnapshot, []patchOp{
		{Op: "replace", Path: "/status", Value: &snapv1.VolumeSnapshotStatus{}},
		{Op: "replace", Path: "/status/boundVolumeSnapshotContentName", Value: contentName},
	}); err != nil {
		return fmt.Errorf("createIndividualSnapshotForGroupSnapshot: binding volumesnapshot to volumesnapshotcontent %w", err)
	}
	_, err = c.patchContentStatus(ctx, createdContent, []patchOp{
		{Op: "replace", Path: "/status", Value: &snapv1.VolumeSnapshotContentStatus{}},
		{Op: "replace", Path: "/status/snapshotHandle", Value: info.SnapshotHandle},
		{Op: "replace", Path: "/status/volumeGroupSnapshotHandle", Value: gc.Status.VolumeGroupSnapshotHandle},
		{Op: "replace", Path: "/status/creationTime", Value: info.CreationTime},
		{Op: "replace", Path: "/status/restoreSize", Value: info.RestoreSize},
		{Op: "replace", Path: "/status/readyToUse", Value: info.ReadyToUse},
	})
	if err != nil {
		return fmt.Errorf("createIndividualSnapshotForGroupSnapshot: setting snapshotHandle in volumesnapshotcontent %w", err)
	}
	return nil
}

// volumeByHandle is the PersistentVolume of a CSI volume, nil if none or
// more than one.
func (c *Controller) volumeByHandle(driver, handle string) *corev1.PersistentVolume {
	pvs, err := c.volumes.List(labels.Everything())
	if err != nil {
		return nil
	}
	var found *corev1.PersistentVolume
	for _, pv := range pvs {
		if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == driver && pv.Spec.CSI.VolumeHandle == handle {
			if found != nil {
				return nil
			}
			found = pv
		}
	}
	return found
}

// groupOwner is the name of the group snapshot a member belongs to, from
// its owner reference; "" for a snapshot of its own.
func groupOwner(s *snapv1.VolumeSnapshot) string {
	for _, o := range s.OwnerReferences {
		if o.Kind == "VolumeGroupSnapshot" && o.APIVersion == groupsnapv1.SchemeGroupVersion.String() {
			return o.Name
		}
	}
	return ""
}

// groupMembers are the group's member snapshots, from the cache.
func (c *Controller) groupMembers(g *groupsnapv1.VolumeGroupSnapshot) []*snapv1.VolumeSnapshot {
	all, err := c.snapshots.VolumeSnapshots(g.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*snapv1.VolumeSnapshot
	for _, s := range all {
		if groupOwner(s) == g.Name {
			out = append(out, s)
		}
	}
	return out
}

// groupSnapshotNameOf is the name of the group snapshot whose content has
// the member content's group handle, for the member's
// status.volumeGroupSnapshotName; "" for a content of its own.
func (c *Controller) groupSnapshotNameOf(content *snapv1.VolumeSnapshotContent) string {
	if content.Status == nil || content.Status.VolumeGroupSnapshotHandle == nil {
		return ""
	}
	all, err := c.groupContents.List(labels.Everything())
	if err != nil {
		return ""
	}
	for _, gc := range all {
		if gc.Status != nil && gc.Status.VolumeGroupSnapshotHandle != nil && *gc.Status.VolumeGroupSnapshotHandle == *content.Status.VolumeGroupSnapshotHandle {
			return gc.Spec.VolumeGroupSnapshotRef.Name
		}
	}
	return ""
}

// syncUnreadyMember binds a member to the content the group path made for
// it; a member without one yet is retried.
func (c *Controller) syncUnreadyMember(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	if boundContent(s) == "" {
		return fmt.Errorf("detected group snapshot member %s with no content, retrying", snapshotKey(s))
	}
	content, err := c.contentFromCache(boundContent(s))
	if err != nil || content == nil {
		return fmt.Errorf("detected group snapshot member %s with no content, retrying", snapshotKey(s))
	}
	return c.bindAndUpdateSnapshot(ctx, content, s)
}

// checkMemberDeletion refuses the deletion of a member whose group
// snapshot still exists (SnapshotDeletePending); once the group is gone,
// removeGroup says the in-group finalizer may go with the others.
func (c *Controller) checkMemberDeletion(s *snapv1.VolumeSnapshot) (removeGroup bool, err error) {
	if s.Status == nil || s.Status.VolumeGroupSnapshotName == nil {
		return false, nil
	}
	g, err := c.groups.VolumeGroupSnapshots(s.Namespace).Get(*s.Status.VolumeGroupSnapshotName)
	if err == nil {
		msg := fmt.Sprintf("deletion of the individual volume snapshot %s is not allowed as it belongs to group snapshot %s. Deleting the group snapshot will trigger the deletion of all the individual volume snapshots that are part of the group.", snapshotKey(s), groupKey(g))
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "SnapshotDeletePending", msg)
		return false, errors.New(msg)
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	return true, nil
}

func (c *Controller) patchSnapshotStatus(ctx context.Context, s *snapv1.VolumeSnapshot, ops []patchOp) (*snapv1.VolumeSnapshot, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return s, err
	}
	return c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Patch(ctx, s.Name, types.JSONPatchType, data, metav1.PatchOptions{}, "status")
}

func (c *Controller) patchContentStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent, ops []patchOp) (*snapv1.VolumeSnapshotContent, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return content, err
	}
	return c.snaps.SnapshotV1().VolumeSnapshotContents().Patch(ctx, content.Name, types.JSONPatchType, data, metav1.PatchOptions{}, "status")
}

func (c *Controller) patchGroupContent(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, ops []patchOp) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return content, err
	}
	return c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Patch(ctx, content.Name, types.JSONPatchType, data, metav1.PatchOptions{})
}
