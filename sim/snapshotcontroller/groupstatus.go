package snapshotcontroller

// The group snapshot's status and deletion, and the group content's sync
// (external-snapshotter v8.7.0, groupsnapshot_controller_helper.go).

import (
	"context"
	"fmt"
	"slices"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csisim/csisim/sim/volumeutil"
)

// updateGroupStatus copies what the content knows into the group's
// status: the bound content, its creation time, readiness and error, with
// the GroupSnapshotCreated and GroupSnapshotReady events when they become
// true.
func (c *Controller) updateGroupStatus(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot, content *groupsnapv1.VolumeGroupSnapshotContent) (*groupsnapv1.VolumeGroupSnapshot, error) {
	current, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace).Get(ctx, g.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error get group snapshot %s from api server: %v", groupKey(g), err)
	}
	name := content.Name
	var ready bool
	var created *metav1.Time
	var cerr *snapv1.VolumeSnapshotError
	if st := content.Status; st != nil {
		created = st.CreationTime.DeepCopy()
		ready = st.ReadyToUse != nil && *st.ReadyToUse
		cerr = st.Error.DeepCopy()
	}
	status := &groupsnapv1.VolumeGroupSnapshotStatus{}
	if current.Status != nil {
		status = current.Status.DeepCopy()
	}
	changed := current.Status == nil
	if status.BoundVolumeGroupSnapshotContentName == nil {
		status.BoundVolumeGroupSnapshotContentName, changed = &name, true
	}
	if status.CreationTime == nil && created != nil {
		status.CreationTime, changed = created, true
	}
	if status.ReadyToUse == nil || *status.ReadyToUse != ready {
		status.ReadyToUse, changed = &ready, true
		if ready {
			status.Error = nil
		}
	}
	if (status.Error == nil) != (cerr == nil) {
		status.Error, changed = cerr, true
	}
	if !changed {
		return current, nil
	}
	next := current.DeepCopy()
	next.Status = status
	if (current.Status == nil || current.Status.CreationTime == nil) && status.CreationTime != nil {
		c.events.Event(volumeutil.WithKind(g), corev1.EventTypeNormal, "GroupSnapshotCreated",
			fmt.Sprintf("GroupSnapshot %s was successfully created by the CSI driver.", groupKey(g)))
	}
	if !isGroupReady(current) && isGroupReady(next) {
		c.events.Event(volumeutil.WithKind(g), corev1.EventTypeNormal, "GroupSnapshotReady", fmt.Sprintf("GroupSnapshot %s is ready to use.", groupKey(g)))
	}
	updated, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, updateError(groupKey(g), err)
	}
	return updated, nil
}

// updateGroupErrorStatus records an error in the group's status with an
// event; the same message already there is not written again.
func (c *Controller) updateGroupErrorStatus(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot, setReadyFalse bool, eventtype, reason, message string) error {
	if g.Status != nil && g.Status.Error != nil && g.Status.Error.Message != nil && *g.Status.Error.Message == message {
		return nil
	}
	next := g.DeepCopy()
	if next.Status == nil {
		next.Status = &groupsnapv1.VolumeGroupSnapshotStatus{}
	}
	now := metav1.NewTime(c.clock.Now())
	next.Status.Error = &snapv1.VolumeSnapshotError{Time: &now, Message: &message}
	if setReadyFalse {
		ready := false
		next.Status.ReadyToUse = &ready
	}
	c.events.Event(volumeutil.WithKind(g), eventtype, reason, message)
	_, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	return err
}

// processGroupWithDeletionTimestamp deletes a group snapshot's members and,
// by its deletionPolicy, its content, then drops the bound finalizer — at
// once when the content stays, on a later sync once it is gone.
func (c *Controller) processGroupWithDeletionTimestamp(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot) error {
	name := groupBoundContent(g)
	if name == "" {
		name = GroupContentName(g)
	}
	content, err := c.groupContentFromCache(name)
	if err != nil {
		return err
	}
	deleteContent := false
	if content != nil && content.Spec.VolumeGroupSnapshotRef.UID == g.UID {
		deleteContent = content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete
	} else {
		content = nil
	}
	if !slices.Contains(g.Finalizers, volumeGroupSnapshotBoundFinalizer) {
		return nil
	}
	members := c.groupMembers(g)
	for _, s := range members {
		if c.isVolumeBeingCreatedFromSnapshot(s) {
			msg := fmt.Sprintf("Snapshot %s belonging to VolumeGroupSnapshot %s is being used to restore a PVC", snapshotKey(s), groupKey(g))
			c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "SnapshotDeletePending", msg)
			return fmt.Errorf("%s: snapshot is in use, will retry deletion", msg)
		}
	}
	if content != nil {
		if content, err = c.setAnnGroupBeingDeleted(ctx, content); err != nil {
			return err
		}
	}
	if content != nil && deleteContent {
		if err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Delete(ctx, content.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "GroupSnapshotContentObjectDeleteError", "Failed to delete group snapshot content API object")
			return fmt.Errorf("failed to delete VolumeGroupSnapshotContent %s from API server: %q", content.Name, err)
		}
	}
	for _, s := range members {
		if s.DeletionTimestamp != nil {
			continue
		}
		err := c.snaps.SnapshotV1().VolumeSnapshots(g.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			msg := fmt.Sprintf("failed to delete snapshot API object %s/%s part of group snapshot %s: %v", g.Namespace, s.Name, groupKey(g), err)
			c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "SnapshotDeleteError", msg)
			return fmt.Errorf("%s", msg)
		}
	}
	if content != nil && deleteContent {
		return nil // the content's deletion syncs the group again
	}
	next := g.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumeGroupSnapshotBoundFinalizer })
	if _, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return updateError(g.Name, err)
	}
	return nil
}

func (c *Controller) setAnnGroupBeingDeleted(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	if _, ok := content.Annotations[AnnVolumeGroupSnapshotBeingDeleted]; ok {
		return content, nil
	}
	annotations := volumeutil.WithAnnotation(content.Annotations, AnnVolumeGroupSnapshotBeingDeleted, "yes")
	updated, err := c.patchGroupContent(ctx, content, []patchOp{{Op: "replace", Path: "/metadata/annotations", Value: annotations}})
	if err != nil {
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

// syncGroupContentByKey is syncGroupSnapshotContent: the content's
// finalizer once it is bound, and its group synced when the content has
// news for it.
func (c *Controller) syncGroupContentByKey(ctx context.Context, name string) error {
	content, err := c.groupContentFromCache(name)
	if err != nil || content == nil {
		return err
	}
	src := content.Spec.Source
	if (src.GroupSnapshotHandles == nil) == (len(src.VolumeHandles) == 0) {
		msg := "Exactly one of GroupSnapshotHandles and VolumeHandles should be specified"
		c.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "GroupContentValidationError", msg)
		return fmt.Errorf("%s", msg)
	}
	ref := content.Spec.VolumeGroupSnapshotRef
	if ref.UID == "" {
		return nil
	}
	if content.DeletionTimestamp == nil && !slices.Contains(content.Finalizers, volumeGroupSnapshotContentFinalizer) {
		op := patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: volumeGroupSnapshotContentFinalizer}
		if len(content.Finalizers) == 0 {
			op = patchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{volumeGroupSnapshotContentFinalizer}}
		}
		if _, err := c.patchGroupContent(ctx, content, []patchOp{op}); err != nil {
			return updateError(content.Name, err)
		}
		return nil
	}
	g, err := c.groups.VolumeGroupSnapshots(ref.Namespace).Get(ref.Name)
	if err == nil && g.UID == ref.UID && needsUpdateGroupStatus(g, content) {
		c.groupQ.Add(ref.Namespace + "/" + ref.Name)
	}
	return nil
}

func needsUpdateGroupStatus(g *groupsnapv1.VolumeGroupSnapshot, content *groupsnapv1.VolumeGroupSnapshotContent) bool {
	gs, cs := g.Status, content.Status
	switch {
	case gs == nil && cs != nil:
		return true
	case cs == nil:
		return false
	case gs.BoundVolumeGroupSnapshotContentName == nil:
		return true
	case gs.CreationTime == nil && cs.CreationTime != nil:
		return true
	case gs.ReadyToUse == nil && cs.ReadyToUse != nil:
		return true
	}
	// The real controller compares the two pointers here, which always
	// differ.
	return gs.ReadyToUse != nil && cs.ReadyToUse != nil
}
