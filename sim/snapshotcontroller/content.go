package snapshotcontroller

import (
	"context"
	"errors"
	"slices"

	"github.com/csisim/csisim/sim/volumeutil"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
)

// syncContent: a bound content gets its finalizer; its snapshot is synced
// when its status falls behind the content's; a content whose snapshot is
// being deleted is marked so for the sidecar.
func (c *Controller) syncContent(ctx context.Context, content *snapv1.VolumeSnapshotContent) error {
	src := content.Spec.Source
	if (src.VolumeHandle == nil) == (src.SnapshotHandle == nil) {
		msg := "Exactly one of VolumeHandle and SnapshotHandle should be specified"
		c.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "ContentValidationError", msg)
		return errors.New(msg)
	}
	r := content.Spec.VolumeSnapshotRef
	if r.UID == "" {
		return nil // pre-bound: the snapshot's sync binds it
	}
	if content.DeletionTimestamp == nil && !slices.Contains(content.Finalizers, volumeutil.VolumeSnapshotContentFinalizer) {
		return c.addContentFinalizer(ctx, content)
	}
	s, err := c.snapshots.VolumeSnapshots(r.Namespace).Get(r.Name)
	if err != nil {
		s = nil
	}
	if s != nil && s.UID != r.UID {
		// Another snapshot of the same name: this content's is gone.
		s = nil
	} else if s != nil && needsUpdateSnapshotStatus(s, content) {
		c.snapshotQ.Add(r.Namespace + "/" + r.Name)
	}
	// A content whose snapshot is gone is left alone: it may have been
	// copied from another cluster, and deleting it would lose the data.
	if s != nil && s.DeletionTimestamp != nil &&
		(slices.Contains(s.Finalizers, volumeutil.VolumeSnapshotAsSourceFinalizer) || slices.Contains(s.Finalizers, volumeutil.VolumeSnapshotBoundFinalizer)) {
		_, err := c.setAnnBeingDeleted(ctx, content)
		return err
	}
	return nil
}

// needsUpdateSnapshotStatus: the content's status has news the snapshot's
// lacks.
func needsUpdateSnapshotStatus(s *snapv1.VolumeSnapshot, content *snapv1.VolumeSnapshotContent) bool {
	cs, ss := content.Status, s.Status
	switch {
	case ss == nil && cs != nil:
		return true
	case cs == nil:
		return false
	case ss.BoundVolumeSnapshotContentName == nil:
		return true
	case ss.CreationTime == nil && cs.CreationTime != nil:
		return true
	case ss.ReadyToUse == nil && cs.ReadyToUse != nil:
		return true
	// The real controller compares the two pointers here, which always
	// differ: a content with readyToUse set always syncs its snapshot.
	case ss.ReadyToUse != nil && cs.ReadyToUse != nil:
		return true
	case ss.RestoreSize == nil && cs.RestoreSize != nil:
		return true
	case ss.RestoreSize != nil && ss.RestoreSize.IsZero() && cs.RestoreSize != nil && *cs.RestoreSize > 0:
		return true
	}
	return false
}

// addContentFinalizer appends the bound-protection finalizer with a JSON
// patch.
func (c *Controller) addContentFinalizer(ctx context.Context, content *snapv1.VolumeSnapshotContent) error {
	op := patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: volumeutil.VolumeSnapshotContentFinalizer}
	if len(content.Finalizers) == 0 {
		op = patchOp{Op: "add", Path: "/metadata/finalizers", Value: []string{volumeutil.VolumeSnapshotContentFinalizer}}
	}
	if _, err := c.patchContent(ctx, content, []patchOp{op}); err != nil {
		return updateError(content.Name, err)
	}
	return nil
}

// setAnnBeingDeleted marks the content: its snapshot is being deleted.
func (c *Controller) setAnnBeingDeleted(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	if _, ok := content.Annotations[volumeutil.AnnSnapshotBeingDeleted]; ok {
		return content, nil
	}
	annotations := volumeutil.WithAnnotation(content.Annotations, volumeutil.AnnSnapshotBeingDeleted, "yes")
	updated, err := c.patchContent(ctx, content, []patchOp{{Op: "replace", Path: "/metadata/annotations", Value: annotations}})
	if err != nil {
		return content, updateError(content.Name, err)
	}
	return updated, nil
}
