package snapshotter

// The csi-snapshotter's group path: a VolumeGroupSnapshotContent of its
// driver is cut with CreateVolumeGroupSnapshot, its status filled from the
// answer, and by its deletionPolicy deleted with DeleteVolumeGroupSnapshot.
// Modelled after external-snapshotter v8.7.0's
// pkg/sidecar-controller/groupsnapshot_helper.go (the feature is GA there
// and on by default). A pre-provisioned group content
// (spec.source.groupSnapshotHandles) is not modelled.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/volumeutil"
)

// The group path's annotations, finalizer and name prefix
// (external-snapshotter v8.7.0 pkg/utils/util.go; --groupsnapshot-name-prefix).
const (
	annGroupBeingCreated   = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-created"
	annGroupBeingDeleted   = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshot-being-deleted"
	groupContentFinalizer  = "groupsnapshot.storage.kubernetes.io/volumegroupsnapshotcontent-bound-protection"
	groupMemberAnnotation  = "groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle"
	DefaultGroupNamePrefix = "groupsnapshot"
)

func (s *Snapshotter) watchGroupContents(group csi.GroupControllerClient, snapFactory snapinformers.SharedInformerFactory, rt controller.Runtime) {
	s.group = group
	s.groupQueue = rt.NewQueueWithBackoff("csi-snapshotter-groupsnapshotcontent", s.cfg.RetryIntervalStart, s.cfg.RetryIntervalMax)
	inf := snapFactory.Groupsnapshot().V1().VolumeGroupSnapshotContents()
	s.groupContents = inf.Lister()
	s.groupClasses = snapFactory.Groupsnapshot().V1().VolumeGroupSnapshotClasses().Lister()
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if content, ok := obj.(*groupsnapv1.VolumeGroupSnapshotContent); ok {
			s.groupQueue.Add(content.Name)
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	})
}

func (s *Snapshotter) resyncGroups() {
	if s.groupQueue == nil {
		return
	}
	contents, _ := s.groupContents.List(labels.Everything())
	for _, content := range contents {
		s.groupQueue.Add(content.Name)
	}
}

func (s *Snapshotter) syncGroupByKey(ctx context.Context, name string) error {
	content, err := s.groupContents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if content.Spec.Driver != s.cfg.DriverName {
		return nil
	}
	requeue, err := s.syncGroupContent(ctx, content)
	if err != nil {
		return fmt.Errorf("syncing VolumeGroupSnapshotContent %s: %w", name, err)
	}
	if requeue {
		return errRequeue
	}
	return nil
}

// syncGroupContent deletes, creates or checks the group; it says whether
// to look again.
func (s *Snapshotter) syncGroupContent(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent) (bool, error) {
	if shouldDeleteGroup(content) {
		if content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete && content.Status != nil && content.Status.VolumeGroupSnapshotHandle != nil {
			var err error
			if content, err = s.deleteGroupSnapshot(ctx, content); err != nil {
				return true, err
			}
		}
		return false, s.removeGroupContentFinalizer(ctx, content)
	}
	if len(content.Spec.Source.VolumeHandles) != 0 && (content.Status == nil || !isGroupReady(content)) {
		updated, err := s.createGroupSnapshot(ctx, content)
		if err != nil {
			s.updateGroupErrorStatus(ctx, updated, corev1.EventTypeWarning, "GroupSnapshotCreationFailed", fmt.Sprintf("Failed to create group snapshot: %v", err))
			return true, err
		}
		return !isGroupReady(updated), nil
	}
	if isGroupReady(content) {
		_, err := s.removeGroupAnnotation(ctx, content, annGroupBeingCreated)
		return err != nil, err
	}
	return false, nil
}

func shouldDeleteGroup(content *groupsnapv1.VolumeGroupSnapshotContent) bool {
	if content.DeletionTimestamp == nil {
		return false
	}
	if _, ok := content.Annotations[annGroupBeingCreated]; ok {
		return false
	}
	_, ok := content.Annotations[annGroupBeingDeleted]
	return ok
}

func isGroupReady(content *groupsnapv1.VolumeGroupSnapshotContent) bool {
	return content.Status != nil && content.Status.ReadyToUse != nil && *content.Status.ReadyToUse
}

// createGroupSnapshot is createGroupSnapshotWrapper: the class's
// parameters, the being-created annotation, CreateVolumeGroupSnapshot
// named groupsnapshot-<group snapshot UID>, the status, the annotation
// off again.
func (s *Snapshotter) createGroupSnapshot(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	if content.Spec.VolumeGroupSnapshotClassName == nil {
		return content, fmt.Errorf("failed to get input parameters to create group snapshot for group snapshot content %s: %q", content.Name,
			fmt.Errorf("failed to take group snapshot %s without a group snapshot class", content.Name))
	}
	class, err := s.groupClasses.Get(*content.Spec.VolumeGroupSnapshotClassName)
	if err != nil {
		return content, fmt.Errorf("failed to get input parameters to create group snapshot for group snapshot content %s: %q", content.Name, err)
	}
	if content, err = s.setGroupAnnotation(ctx, content, annGroupBeingCreated); err != nil {
		return content, fmt.Errorf("failed to add VolumeGroupSnapshotBeingCreated annotation on the group snapshot content %s: %q", content.Name, err)
	}
	params, err := driverParameters(class.Parameters)
	if err != nil {
		return content, fmt.Errorf("failed to remove CSI Parameters of prefixed keys: %v", err)
	}
	if content.Spec.VolumeGroupSnapshotRef.UID == "" {
		return content, fmt.Errorf("failed to take group snapshot of the volumes %s: %q", content.Spec.Source.VolumeHandles,
			fmt.Errorf("cannot create group snapshot. Group snapshot content %s not bound to a group snapshot", content.Name))
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := s.group.CreateVolumeGroupSnapshot(callCtx, &csi.CreateVolumeGroupSnapshotRequest{
		Name: DefaultGroupNamePrefix + "-" + string(content.Spec.VolumeGroupSnapshotRef.UID), SourceVolumeIds: content.Spec.Source.VolumeHandles, Parameters: params})
	if err != nil {
		if isFinalError(err) {
			if content, err := s.removeGroupAnnotation(ctx, content, annGroupBeingCreated); err != nil {
				return content, fmt.Errorf("failed to remove VolumeGroupSnapshotBeingCreated annotation from the group snapshot content %s: %s", content.Name, err)
			}
		}
		return content, fmt.Errorf("failed to take group snapshot of the volumes %s: %q", content.Spec.Source.VolumeHandles, err)
	}
	updated, err := s.updateGroupContentStatus(ctx, content, resp.GetGroupSnapshot())
	if err != nil {
		return content, fmt.Errorf("error updating status for volume group snapshot content %s: %v", content.Name, err)
	}
	if updated, err = s.removeGroupAnnotation(ctx, updated, annGroupBeingCreated); err != nil {
		return updated, fmt.Errorf("failed to remove VolumeGroupSnapshotBeingCreated annotation on the groupSnapshotContent %s: %q", updated.Name, err)
	}
	return updated, nil
}

// updateGroupContentStatus writes the group's handle, readiness, creation
// time and one entry per member snapshot.
func (s *Snapshotter) updateGroupContentStatus(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, g *csi.VolumeGroupSnapshot) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	current, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error get group snapshot content %s from api server: %v", content.Name, err)
	}
	status := &groupsnapv1.VolumeGroupSnapshotContentStatus{}
	if current.Status != nil {
		status = current.Status.DeepCopy()
	}
	handle, ready := g.GetGroupSnapshotId(), g.GetReadyToUse()
	created := metav1.NewTime(s.clock.Now())
	if g.GetCreationTime() != nil {
		created = metav1.NewTime(g.GetCreationTime().AsTime())
	}
	if status.VolumeGroupSnapshotHandle == nil {
		status.VolumeGroupSnapshotHandle = &handle
	}
	if status.ReadyToUse == nil || *status.ReadyToUse != ready {
		status.ReadyToUse = &ready
		if ready {
			status.Error = nil
		}
	}
	if status.CreationTime == nil {
		status.CreationTime = &created
	}
	if len(status.VolumeSnapshotInfoList) == 0 {
		for _, snap := range g.GetSnapshots() {
			ns, size, snapReady := snap.GetCreationTime().AsTime().UnixNano(), snap.GetSizeBytes(), snap.GetReadyToUse()
			status.VolumeSnapshotInfoList = append(status.VolumeSnapshotInfoList, groupsnapv1.VolumeSnapshotInfo{
				VolumeHandle: snap.GetSourceVolumeId(), SnapshotHandle: snap.GetSnapshotId(),
				CreationTime: &ns, ReadyToUse: &snapReady, RestoreSize: &size,
			})
		}
	}
	next := current.DeepCopy()
	next.Status = status
	updated, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return current, updateError(content.Name, err)
	}
	return updated, nil
}

// deleteGroupSnapshot calls DeleteVolumeGroupSnapshot with the members'
// snapshot IDs and clears the group out of the content's status.
func (s *Snapshotter) deleteGroupSnapshot(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	var ids []string
	for _, info := range content.Status.VolumeSnapshotInfoList {
		ids = append(ids, info.SnapshotHandle)
	}
	err := fmt.Errorf("cannot delete group snapshot content %s. No snapshots found in the group snapshot", content.Name)
	if len(ids) > 0 {
		callCtx, cancel := csiclient.WithTimeout(ctx, s.cfg.Timeout)
		_, err = s.group.DeleteVolumeGroupSnapshot(callCtx, &csi.DeleteVolumeGroupSnapshotRequest{
			GroupSnapshotId: *content.Status.VolumeGroupSnapshotHandle, SnapshotIds: ids})
		cancel()
	}
	if err != nil {
		s.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "GroupSnapshotDeleteError", "Failed to delete group snapshot")
		return content, fmt.Errorf("failed to delete group snapshot %#v, err: %v", content.Name, err)
	}
	current, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil {
		return content, fmt.Errorf("error get group snapshot content %s from api server: %v", content.Name, err)
	}
	next := current.DeepCopy()
	if next.Status != nil {
		next.Status.VolumeGroupSnapshotHandle, next.Status.ReadyToUse, next.Status.CreationTime, next.Status.Error = nil, nil, nil, nil
	}
	updated, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		s.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "GroupSnapshotDeleteError", "Failed to clear content status")
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

func (s *Snapshotter) updateGroupErrorStatus(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, eventtype, reason, message string) {
	if content.Status != nil && content.Status.Error != nil && content.Status.Error.Message != nil && *content.Status.Error.Message == message {
		return
	}
	ready := false
	now := metav1.NewTime(s.clock.Now())
	cerr := &snapv1.VolumeSnapshotError{Time: &now, Message: &message}
	ops := []patchOp{{Op: "replace", Path: "/status", Value: &groupsnapv1.VolumeGroupSnapshotContentStatus{ReadyToUse: &ready, Error: cerr}}}
	if content.Status != nil {
		ops = []patchOp{{Op: "replace", Path: "/status/error", Value: cerr}, {Op: "replace", Path: "/status/readyToUse", Value: &ready}}
	}
	_, _ = s.patchGroup(ctx, content, ops, "status")
	s.events.Event(volumeutil.WithKind(content), eventtype, reason, message)
}

func (s *Snapshotter) setGroupAnnotation(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, key string) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	if _, ok := content.Annotations[key]; ok {
		return content, nil
	}
	annotations := volumeutil.WithAnnotation(content.Annotations, key, "yes")
	updated, err := s.patchGroup(ctx, content, []patchOp{{Op: "replace", Path: "/metadata/annotations", Value: annotations}})
	if err != nil {
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

func (s *Snapshotter) removeGroupAnnotation(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, key string) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	if _, ok := content.Annotations[key]; !ok {
		return content, nil
	}
	updated, err := s.patchGroup(ctx, content, []patchOp{{Op: "remove", Path: "/metadata/annotations/" + strings.ReplaceAll(key, "/", "~1")}})
	if err != nil {
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

func (s *Snapshotter) removeGroupContentFinalizer(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent) error {
	if !slices.Contains(content.Finalizers, groupContentFinalizer) {
		return nil
	}
	rest := slices.DeleteFunc(slices.Clone(content.Finalizers), func(f string) bool { return f == groupContentFinalizer })
	if _, err := s.patchGroup(ctx, content, []patchOp{{Op: "replace", Path: "/metadata/finalizers", Value: rest}}); err != nil {
		return updateError(content.Name, err)
	}
	return nil
}

func (s *Snapshotter) patchGroup(ctx context.Context, content *groupsnapv1.VolumeGroupSnapshotContent, ops []patchOp, subresources ...string) (*groupsnapv1.VolumeGroupSnapshotContent, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return content, err
	}
	updated, err := s.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Patch(ctx, content.Name, types.JSONPatchType, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return content, err
	}
	return updated, nil
}
