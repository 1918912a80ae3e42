package snapshotcontroller

// The group path of the snapshot-controller: a VolumeGroupSnapshot that
// selects claims by label gets a VolumeGroupSnapshotContent
// (groupsnapcontent-<uid>) for the csi-snapshotter to cut, and once cut, one
// VolumeSnapshot and VolumeSnapshotContent per member (groupmembers.go).
// Modelled after external-snapshotter v8.7.0's
// pkg/common-controller/groupsnapshot_controller_helper.go; a
// pre-provisioned group (spec.source.volumeGroupSnapshotContentName) is
// not modelled and is refused with an event.

import (
	"context"
	"fmt"
	"slices"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/volumeutil"
)

// The group snapshot finalizers, annotations and names of
// external-snapshotter v8.7.0 (pkg/utils/util.go).
const (
	volumeGroupSnapshotBoundFinalizer   = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-bound-protection"
	volumeGroupSnapshotContentFinalizer = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshotcontent-bound-protection"
	// VolumeSnapshotInGroupFinalizer is on every member VolumeSnapshot
	// until its group is gone.
	VolumeSnapshotInGroupFinalizer = "snapshot.storage.kubernetes.io/volumesnapshot-in-group-protection"
	// AnnVolumeGroupSnapshotBeingDeleted marks a group content whose
	// group snapshot is being deleted.
	AnnVolumeGroupSnapshotBeingDeleted = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-deleted"
	// VolumeGroupSnapshotHandleAnnotation marks a member content: the
	// csi-snapshotter does not cut it on its own.
	VolumeGroupSnapshotHandleAnnotation   = "groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle"
	isDefaultGroupSnapshotClassAnnotation = "groupsnapshot.storage.kubernetes.io/is-default-class"
)

// GroupContentName is the dynamic content of a group snapshot
// (utils.GetDynamicSnapshotContentNameForGroupSnapshot).
func GroupContentName(g *groupsnapv1.VolumeGroupSnapshot) string {
	return "groupsnapcontent-" + string(g.UID)
}

func groupKey(g *groupsnapv1.VolumeGroupSnapshot) string { return g.Namespace + "/" + g.Name }

func (c *Controller) enqueueGroup(obj any) {
	if g, ok := unwrapGroup(obj); ok {
		c.groupQ.Add(groupKey(g))
	}
}

func unwrapGroup(obj any) (*groupsnapv1.VolumeGroupSnapshot, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	g, ok := obj.(*groupsnapv1.VolumeGroupSnapshot)
	return g, ok
}

func (c *Controller) enqueueGroupContent(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if content, ok := obj.(*groupsnapv1.VolumeGroupSnapshotContent); ok {
		c.groupContentQ.Add(content.Name)
	}
}

func (c *Controller) syncGroupByKey(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	g, err := c.groups.VolumeGroupSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.syncGroup(ctx, g); err != nil {
		return fmt.Errorf("syncing VolumeGroupSnapshot %s: %w", key, err)
	}
	return nil
}

// syncGroup is syncGroupSnapshot: deletion, validation, the bound
// finalizer, and the unready path until the group is ready.
func (c *Controller) syncGroup(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot) error {
	if g.DeletionTimestamp != nil {
		return c.processGroupWithDeletionTimestamp(ctx, g)
	}
	src := g.Spec.Source
	if (src.Selector == nil) == (src.VolumeGroupSnapshotContentName == nil) {
		msg := "Exactly one of Selector and VolumeGroupSnapshotContentName should be specified"
		_ = c.updateGroupErrorStatus(ctx, g, true, corev1.EventTypeWarning, "GroupSnapshotValidationError", msg)
		return fmt.Errorf("%s", msg)
	}
	if src.VolumeGroupSnapshotContentName != nil {
		msg := "csisim does not model pre-provisioned group snapshots (spec.source.volumeGroupSnapshotContentName)"
		return c.updateGroupErrorStatus(ctx, g, true, corev1.EventTypeWarning, "GroupSnapshotContentMissing", msg)
	}
	content, err := c.groupContentFromCache(GroupContentName(g))
	if err != nil {
		return err
	}
	if content != nil && content.Spec.VolumeGroupSnapshotRef.UID != g.UID {
		msg := fmt.Sprintf("VolumeGroupSnapshotContent [%s] is bound to a different group snapshot", content.Name)
		return c.updateGroupErrorStatus(ctx, g, true, corev1.EventTypeWarning, "GroupSnapshotContentMisbound", msg)
	}
	if content != nil && !slices.Contains(g.Finalizers, volumeGroupSnapshotBoundFinalizer) && groupBoundContent(g) != "" {
		next := g.DeepCopy()
		next.Finalizers = append(next.Finalizers, volumeGroupSnapshotBoundFinalizer)
		if _, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "GroupSnapshotFinalizerError",
				fmt.Sprintf("Failed to check and update group snapshot: %s", updateError(groupKey(g), err)))
			return updateError(groupKey(g), err)
		}
		return nil // the update syncs the group again
	}
	if isGroupReady(g) && groupBoundContent(g) != "" {
		return nil
	}
	if content == nil {
		return c.createGroupContent(ctx, g)
	}
	if err := c.createMembers(ctx, content, g); err != nil {
		return err
	}
	_, err = c.updateGroupStatus(ctx, g, content)
	if err != nil {
		_ = c.updateGroupErrorStatus(ctx, g, true, corev1.EventTypeWarning, "GroupSnapshotStatusUpdateFailed", fmt.Sprintf("GroupSnapshot status update failed, %v", err))
	}
	return err
}

func groupBoundContent(g *groupsnapv1.VolumeGroupSnapshot) string {
	if g.Status == nil || g.Status.BoundVolumeGroupSnapshotContentName == nil {
		return ""
	}
	return *g.Status.BoundVolumeGroupSnapshotContentName
}

func isGroupReady(g *groupsnapv1.VolumeGroupSnapshot) bool {
	return g.Status != nil && g.Status.ReadyToUse != nil && *g.Status.ReadyToUse
}

func (c *Controller) groupContentFromCache(name string) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	content, err := c.groupContents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return content, err
}

// createGroupContent makes the group's content from its class and the
// volumes of the claims its selector picks, after the class is settled
// (the default one of the volumes' driver when none is named).
func (c *Controller) createGroupContent(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot) error {
	fail := func(err error) error {
		msg := fmt.Sprintf("failed to create group snapshot content with error %v", err)
		_ = c.updateGroupErrorStatus(ctx, g, true, corev1.EventTypeWarning, "GroupSnapshotContentCreationFailed", msg)
		return err
	}
	volumes, err := c.groupVolumes(ctx, g)
	if err != nil {
		return fail(fmt.Errorf("failed to get input parameters to create group snapshot %s: %q", g.Name, err))
	}
	class, g, err := c.groupClass(ctx, g, volumes)
	if err != nil {
		return fail(fmt.Errorf("failed to get input parameters to create group snapshot %s: %q", g.Name, err))
	}
	var handles []string
	for _, pv := range volumes {
		if pv.Spec.CSI == nil {
			c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "CreateGroupSnapshotContentFailed", fmt.Sprintf("Cannot snapshot a non-CSI volume: %s", pv.Name))
			return fail(fmt.Errorf("cannot snapshot a non-CSI volume for group snapshot %s: %s", groupKey(g), pv.Name))
		}
		if pv.Spec.CSI.Driver != class.Driver {
			msg := fmt.Sprintf("Volume CSI driver (%s) mismatch with VolumeGroupSnapshotClass (%s) %s: %s", pv.Spec.CSI.Driver, class.Driver, groupKey(g), pv.Name)
			c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "CreateGroupSnapshotContentFailed", msg)
			return fail(updateError(groupKey(g), fmt.Errorf("%s", msg)))
		}
		handles = append(handles, pv.Spec.CSI.VolumeHandle)
	}
	content := &groupsnapv1.VolumeGroupSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: GroupContentName(g)},
		Spec: groupsnapv1.VolumeGroupSnapshotContentSpec{
			VolumeGroupSnapshotRef: corev1.ObjectReference{Kind: "VolumeGroupSnapshot", Namespace: g.Namespace, Name: g.Name,
				UID: g.UID, APIVersion: groupsnapv1.SchemeGroupVersion.String(), ResourceVersion: g.ResourceVersion},
			Source:                       groupsnapv1.VolumeGroupSnapshotContentSource{VolumeHandles: handles},
			VolumeGroupSnapshotClassName: &class.Name,
			DeletionPolicy:               class.DeletionPolicy,
			Driver:                       class.Driver,
		},
	}
	created, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Create(ctx, content, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = content, nil
	}
	if err != nil {
		msg := fmt.Sprintf("Error creating volume group snapshot content object for group snapshot %s: %v.", groupKey(g), err)
		c.events.Event(volumeutil.WithKind(g), corev1.EventTypeWarning, "CreateGroupSnapshotContentFailed", msg)
		return fail(updateError(groupKey(g), err))
	}
	c.events.Event(volumeutil.WithKind(g), corev1.EventTypeNormal, "CreatingGroupSnapshot",
		fmt.Sprintf("Waiting for a group snapshot %s to be created by the CSI driver.", groupKey(g)))
	if _, err := c.updateGroupStatus(ctx, g, created); err != nil {
		_ = c.updateGroupErrorStatus(ctx, g, false, corev1.EventTypeWarning, "GroupSnapshotStatusUpdateFailed", fmt.Sprintf("GroupSnapshot status update failed, %v", err))
		return err
	}
	return nil
}

// groupVolumes are the bound volumes of the claims the selector picks;
// an unbound claim, or none, is an error.
func (c *Controller) groupVolumes(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot) ([]*corev1.PersistentVolume, error) {
	sel := g.Spec.Source.Selector
	claims, err := c.client.CoreV1().PersistentVolumeClaims(g.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set(sel.MatchLabels).String()})
	if err != nil {
		return nil, fmt.Errorf("failed to list PVCs with label selector %s: %q", metav1.FormatLabelSelector(sel), err)
	}
	if len(claims.Items) == 0 {
		return nil, fmt.Errorf("label selector %s for group snapshot not applied to any PVC", metav1.FormatLabelSelector(sel))
	}
	var pvs []*corev1.PersistentVolume
	for _, claim := range claims.Items {
		if claim.Status.Phase != corev1.ClaimBound {
			return nil, fmt.Errorf("the PVC %s is not yet bound to a PV, will not attempt to take a group snapshot", claim.Name)
		}
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("failed to retrieve PV %s from the API server: %q", claim.Spec.VolumeName, err)
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != claim.Name || ref.Namespace != claim.Namespace || ref.UID != claim.UID {
			return nil, fmt.Errorf("claim in dataSource not bound or invalid")
		}
		pvs = append(pvs, pv)
	}
	return pvs, nil
}

// groupClass is the group's class; with none named, the one default class
// of the first volume's driver is written into the group first
// (SetDefaultGroupSnapshotClass).
func (c *Controller) groupClass(ctx context.Context, g *groupsnapv1.VolumeGroupSnapshot, volumes []*corev1.PersistentVolume) (*groupsnapv1.VolumeGroupSnapshotClass, *groupsnapv1.VolumeGroupSnapshot, error) {
	if name := g.Spec.VolumeGroupSnapshotClassName; name != nil {
		class, err := c.groupClasses.Get(*name)
		return class, g, err
	}
	if volumes[0].Spec.CSI == nil {
		return nil, g, fmt.Errorf("snapshotting non-CSI volumes is not supported, group snapshot:%s/%s", g.Namespace, g.Name)
	}
	driver := volumes[0].Spec.CSI.Driver
	all, err := c.groupClasses.List(labels.Everything())
	if err != nil {
		return nil, g, err
	}
	var defaults []*groupsnapv1.VolumeGroupSnapshotClass
	for _, class := range all {
		if class.Annotations[isDefaultGroupSnapshotClassAnnotation] == "true" && class.Driver == driver {
			defaults = append(defaults, class)
		}
	}
	switch {
	case len(defaults) == 0:
		return nil, g, fmt.Errorf("cannot find default group snapshot class")
	case len(defaults) > 1:
		return nil, g, fmt.Errorf("%d default snapshot classes were found", len(defaults))
	}
	next := g.DeepCopy()
	next.Spec.VolumeGroupSnapshotClassName = &defaults[0].Name
	updated, err := c.snaps.GroupsnapshotV1().VolumeGroupSnapshots(g.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, g, err
	}
	return defaults[0], updated, nil
}
