package snapshotcontroller

import (
	"context"
	"errors"
	"fmt"
	"github.com/csisim/csisim/sim/volumeutil"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
)

// The restore's data source kind (external-snapshotter
// common-controller/snapshot_controller.go).
const (
	snapshotKind     = "VolumeSnapshot"
	snapshotAPIGroup = snapv1.GroupName
)

// checkAndUpdateSnapshotClass finds the snapshot's class, or sets the
// default class of its claim's driver when it names none. On error it
// returns the snapshot as it was.
func (c *Controller) checkAndUpdateSnapshotClass(ctx context.Context, s *snapv1.VolumeSnapshot) (*snapv1.VolumeSnapshot, error) {
	if groupOwner(s) != "" {
		return s, nil // a group's member has no class of its own
	}
	if name := s.Spec.VolumeSnapshotClassName; name != nil {
		if _, err := c.classes.Get(*name); err != nil {
			c.updateErrorStatus(ctx, s, false, corev1.EventTypeWarning, "GetSnapshotClassFailed",
				fmt.Sprintf("Failed to get snapshot class with error %v", err))
			return s, err
		}
		return s, nil
	}
	updated, err := c.setDefaultSnapshotClass(ctx, s)
	if err != nil {
		c.updateErrorStatus(ctx, s, false, corev1.EventTypeWarning, "SetDefaultSnapshotClassFailed",
			fmt.Sprintf("Failed to set default snapshot class with error %v", err))
		return s, err
	}
	return updated, nil
}

// setDefaultSnapshotClass writes the name of the one class marked default
// for the driver of the snapshot's volume into the snapshot's spec. A
// pre-provisioned snapshot needs no class.
func (c *Controller) setDefaultSnapshotClass(ctx context.Context, s *snapv1.VolumeSnapshot) (*snapv1.VolumeSnapshot, error) {
	if s.Spec.Source.VolumeSnapshotContentName != nil {
		return s, nil
	}
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return s, err
	}
	pv, err := c.volumeOf(ctx, s)
	if err != nil {
		return s, err
	}
	if pv.Spec.CSI == nil {
		return s, fmt.Errorf("snapshotting non-CSI volumes is not supported, snapshot:%s/%s", s.Namespace, s.Name)
	}
	var defaults []*snapv1.VolumeSnapshotClass
	for _, class := range classes {
		if class.Annotations[volumeutil.AnnIsDefaultSnapshotClass] == "true" && class.Driver == pv.Spec.CSI.Driver {
			defaults = append(defaults, class)
		}
	}
	switch len(defaults) {
	case 0:
		return s, errors.New("cannot find default snapshot class")
	case 1:
	default:
		return s, fmt.Errorf("%d default snapshot classes were found", len(defaults))
	}
	updated, err := c.patchSnapshot(ctx, s, []patchOp{{Op: "replace", Path: "/spec/volumeSnapshotClassName", Value: defaults[0].Name}})
	if err != nil {
		// As the real controller: the failed patch is only logged, and the
		// sync goes on with the snapshot as it was.
		return s, nil
	}
	return updated, nil
}

// volumeOf is the PV bound to the snapshot's source claim, read from the
// API server as the real controller reads it.
func (c *Controller) volumeOf(ctx context.Context, s *snapv1.VolumeSnapshot) (*corev1.PersistentVolume, error) {
	claim, err := c.claimOf(s)
	if err != nil {
		return nil, err
	}
	if claim.Status.Phase != corev1.ClaimBound {
		return nil, fmt.Errorf("the PVC %s is not yet bound to a PV, will not attempt to take a snapshot", claim.Name)
	}
	pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to retrieve PV %s from the API server: %q", claim.Spec.VolumeName, err)
	}
	r := pv.Spec.ClaimRef
	if r == nil || r.Name != claim.Name || r.Namespace != claim.Namespace || (r.UID != "" && r.UID != claim.UID) {
		return nil, errors.New("claim in dataSource not bound or invalid")
	}
	return pv, nil
}

// syncSnapshot decides what to do with a snapshot, in the real
// controller's order.
func (c *Controller) syncSnapshot(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	if err := c.checkAndRemovePVCFinalizer(ctx, s, false); err != nil {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "ErrorPVCFinalizer", "Error check and remove PVC Finalizer for VolumeSnapshot")
	}
	if s.DeletionTimestamp != nil {
		return c.processSnapshotWithDeletionTimestamp(ctx, s)
	}
	if (s.Spec.Source.PersistentVolumeClaimName == nil) == (s.Spec.Source.VolumeSnapshotContentName == nil) {
		msg := "Exactly one of PersistentVolumeClaimName and VolumeSnapshotContentName should be specified"
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotValidationError", msg)
		return errors.New(msg)
	}
	if err := c.checkAndAddSnapshotFinalizers(ctx, s); err != nil {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "SnapshotFinalizerError", fmt.Sprintf("Failed to check and update snapshot: %s", err))
		return err
	}
	if !isReady(s) || boundContent(s) == "" {
		return c.syncUnreadySnapshot(ctx, s)
	}
	return c.syncReadySnapshot(ctx, s)
}

// syncReadySnapshot checks that a ready snapshot's content is still there
// and still bound to it.
func (c *Controller) syncReadySnapshot(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	content, err := c.contentFromCache(boundContent(s))
	if err != nil {
		return nil
	}
	if content == nil {
		return c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentMissing", "VolumeSnapshotContent is missing")
	}
	if !refersTo(content, s) {
		return c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotMisbound",
			"VolumeSnapshotContent is not bound to the VolumeSnapshot correctly")
	}
	return nil
}

// syncUnreadySnapshot binds a snapshot to its content — the pre-provisioned
// one it names, or the one made for it, made now if need be — and copies
// the content's status.
func (c *Controller) syncUnreadySnapshot(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	key := snapshotKey(s)
	if groupOwner(s) != "" {
		return c.syncUnreadyMember(ctx, s)
	}
	if name := s.Spec.Source.VolumeSnapshotContentName; name != nil {
		content, err := c.preprovisionedContent(ctx, s)
		if err != nil {
			return err
		}
		if content == nil {
			c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentMissing", "VolumeSnapshotContent is missing")
			return fmt.Errorf("snapshot %s requests an non-existing content %s", key, *name)
		}
		bound, err := c.checkAndBindContent(ctx, s, content)
		if err != nil {
			c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotBindFailed",
				fmt.Sprintf("Snapshot failed to bind VolumeSnapshotContent, %v", err))
			return fmt.Errorf("snapshot %s is bound, but VolumeSnapshotContent %s is not bound to the VolumeSnapshot correctly, %v", key, content.Name, err)
		}
		if _, err := c.updateSnapshotStatus(ctx, s, bound); err != nil {
			c.updateErrorStatus(ctx, s, false, corev1.EventTypeWarning, "SnapshotStatusUpdateFailed",
				fmt.Sprintf("Snapshot status update failed, %v", err))
			return err
		}
		return nil
	}
	content, err := c.dynamicContent(ctx, s)
	if err != nil {
		return err
	}
	if content != nil {
		if content.Spec.Source.SnapshotHandle != nil {
			c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotHandleSet",
				fmt.Sprintf("Snapshot handle should not be set in content %s for dynamic provisioning", key))
			return fmt.Errorf("snapshotHandle should not be set in the content for dynamic provisioning for snapshot %s", key)
		}
		return c.bindAndUpdateSnapshot(ctx, content, s)
	}
	if s.Spec.Source.PersistentVolumeClaimName == nil {
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotPVCSourceMissing",
			fmt.Sprintf("PVC source for snapshot %s is missing", key))
		return fmt.Errorf("expected PVC source for snapshot %s but got nil", key)
	}
	created, err := c.createSnapshotContent(ctx, s)
	if err != nil {
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentCreationFailed",
			fmt.Sprintf("Failed to create snapshot content with error %v", err))
		return err
	}
	if _, err := c.updateSnapshotStatus(ctx, s, created); err != nil {
		c.updateErrorStatus(ctx, s, false, corev1.EventTypeWarning, "SnapshotStatusUpdateFailed",
			fmt.Sprintf("Snapshot status update failed, %v", err))
		return err
	}
	return nil
}

// bindAndUpdateSnapshot copies the status of the content made for the
// snapshot into the snapshot's.
func (c *Controller) bindAndUpdateSnapshot(ctx context.Context, content *snapv1.VolumeSnapshotContent, s *snapv1.VolumeSnapshot) error {
	current, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("error get snapshot %s from api server: %v", snapshotKey(s), err)
	}
	if _, err := c.updateSnapshotStatus(ctx, current, content); err != nil {
		c.updateErrorStatus(ctx, current, true, corev1.EventTypeWarning, "SnapshotStatusUpdateFailed",
			fmt.Sprintf("Snapshot status update failed, %v", err))
		return err
	}
	return nil
}

// preprovisionedContent is the content a pre-provisioned snapshot names,
// nil if there is none (yet); a content that is not pre-provisioned or
// bound elsewhere is an error, reported on the snapshot.
func (c *Controller) preprovisionedContent(ctx context.Context, s *snapv1.VolumeSnapshot) (*snapv1.VolumeSnapshotContent, error) {
	name := *s.Spec.Source.VolumeSnapshotContentName
	if name == "" {
		return nil, fmt.Errorf("empty VolumeSnapshotContentName for snapshot %s", snapshotKey(s))
	}
	content, err := c.contentFromCache(name)
	if err != nil || content == nil {
		return nil, err
	}
	if content.Spec.Source.SnapshotHandle == nil {
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentMismatch",
			"VolumeSnapshotContent is dynamically provisioned while expecting a pre-provisioned one")
		return nil, fmt.Errorf("snapshot %s expects a pre-provisioned VolumeSnapshotContent %s but gets a dynamically provisioned one", snapshotKey(s), name)
	}
	r := content.Spec.VolumeSnapshotRef
	if r.Name != s.Name || r.Namespace != s.Namespace || (r.UID != "" && r.UID != s.UID) {
		msg := fmt.Sprintf("VolumeSnapshotContent [%s] is bound to a different snapshot", name)
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentMisbound", msg)
		return nil, errors.New(msg)
	}
	return content, nil
}

// dynamicContent is the content made for a snapshot of a claim, nil if it
// is not made yet.
func (c *Controller) dynamicContent(ctx context.Context, s *snapv1.VolumeSnapshot) (*snapv1.VolumeSnapshotContent, error) {
	name := volumeutil.SnapshotContentName(s)
	content, err := c.contentFromCache(name)
	if err != nil || content == nil {
		return nil, err
	}
	if content.Spec.Source.VolumeHandle == nil {
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentMismatch",
			"VolumeSnapshotContent "+name+" is pre-provisioned while expecting a dynamically provisioned one")
		return nil, fmt.Errorf("snapshot %s expects a dynamically provisioned VolumeSnapshotContent %s but gets a pre-provisioned one", snapshotKey(s), name)
	}
	if !refersTo(content, s) {
		msg := fmt.Sprintf("VolumeSnapshotContent [%s] is bound to a different snapshot", name)
		c.updateErrorStatus(ctx, s, true, corev1.EventTypeWarning, "SnapshotContentMisbound", msg)
		return nil, errors.New(msg)
	}
	return content, nil
}

func refersTo(content *snapv1.VolumeSnapshotContent, s *snapv1.VolumeSnapshot) bool {
	r := content.Spec.VolumeSnapshotRef
	return r.Name == s.Name && r.Namespace == s.Namespace && r.UID == s.UID
}

func (c *Controller) contentFromCache(name string) (*snapv1.VolumeSnapshotContent, error) {
	content, err := c.contents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return content, err
}

// createSnapshotContent makes the content for a snapshot of a claim, with
// the protection finalizer on the claim first.
func (c *Controller) createSnapshotContent(ctx context.Context, s *snapv1.VolumeSnapshot) (*snapv1.VolumeSnapshotContent, error) {
	if err := c.ensurePVCFinalizer(ctx, s); err != nil {
		return nil, err
	}
	class, pv, secret, err := c.createSnapshotInput(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("failed to get input parameters to create snapshot %s: %q", s.Name, err)
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Errorf("cannot find CSI PersistentVolumeSource for volume %s", pv.Name)
	}
	// What client-go's reference.GetReference makes of the snapshot.
	snapRef := &corev1.ObjectReference{Kind: snapshotKind, APIVersion: snapv1.SchemeGroupVersion.String(),
		Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion}
	className := class.Name
	handle := pv.Spec.CSI.VolumeHandle
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: volumeutil.SnapshotContentName(s)},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef:       *snapRef,
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: &handle},
			VolumeSnapshotClassName: &className,
			DeletionPolicy:          class.DeletionPolicy,
			Driver:                  class.Driver,
			// --prevent-volume-mode-conversion is on by default.
			SourceVolumeMode: pv.Spec.VolumeMode,
		},
	}
	if secret != nil {
		content.Annotations = map[string]string{volumeutil.AnnSnapshotDeletionSecretName: secret.Name, volumeutil.AnnSnapshotDeletionSecretNamespace: secret.Namespace}
	}
	created, err := c.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, content, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = content, nil
	}
	if err != nil {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "CreateSnapshotContentFailed",
			fmt.Sprintf("Error creating volume snapshot content object for snapshot %s: %v.", snapshotKey(s), err))
		return nil, updateError(snapshotKey(s), err)
	}
	c.events.Event(volumeutil.WithKind(s), corev1.EventTypeNormal, "CreatingSnapshot",
		fmt.Sprintf("Waiting for a snapshot %s to be created by the CSI driver.", snapshotKey(s)))
	return created, nil
}

// createSnapshotInput: the snapshot's class, its claim's volume and the
// snapshotter secret the class names.
func (c *Controller) createSnapshotInput(ctx context.Context, s *snapv1.VolumeSnapshot) (*snapv1.VolumeSnapshotClass, *corev1.PersistentVolume, *corev1.SecretReference, error) {
	if s.Spec.VolumeSnapshotClassName == nil {
		return nil, nil, nil, fmt.Errorf("failed to take snapshot %s without a snapshot class", s.Name)
	}
	class, err := c.classes.Get(*s.Spec.VolumeSnapshotClassName)
	if err != nil {
		return nil, nil, nil, err
	}
	pv, err := c.volumeOf(ctx, s)
	if err != nil {
		return nil, nil, nil, err
	}
	secret, err := volumeutil.SnapshotSecretReference(volumeutil.SnapshotterSecret, class.Parameters, volumeutil.SnapshotContentName(s), s)
	if err != nil {
		return nil, nil, nil, err
	}
	return class, pv, secret, nil
}

// checkAndBindContent writes the snapshot's UID (and class) into a
// pre-provisioned content that names it.
func (c *Controller) checkAndBindContent(ctx context.Context, s *snapv1.VolumeSnapshot, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	r := content.Spec.VolumeSnapshotRef
	switch {
	case r.Name != s.Name, r.UID != "" && r.UID != s.UID:
		return nil, fmt.Errorf("Could not bind snapshot %s and content %s, the VolumeSnapshotRef does not match", s.Name, content.Name)
	case r.UID != "" && content.Spec.VolumeSnapshotClassName != nil:
		return content, nil
	}
	ops := []patchOp{{Op: "replace", Path: "/spec/volumeSnapshotRef/uid", Value: string(s.UID)}}
	if s.Spec.VolumeSnapshotClassName != nil {
		ops = append(ops, patchOp{Op: "replace", Path: "/spec/volumeSnapshotClassName", Value: *s.Spec.VolumeSnapshotClassName})
	}
	return c.patchContent(ctx, content, ops)
}

// updateSnapshotStatus copies the content's status into the snapshot's,
// with the SnapshotCreated and SnapshotReady events when the snapshot
// first has a creation time and first is ready.
func (c *Controller) updateSnapshotStatus(ctx context.Context, s *snapv1.VolumeSnapshot, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshot, error) {
	current, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error get snapshot %s from api server: %v", snapshotKey(s), err)
	}
	name := content.Name
	var ready bool
	var created *metav1.Time
	var size *int64
	var cerr *snapv1.VolumeSnapshotError
	if st := content.Status; st != nil {
		if st.CreationTime != nil {
			created = &metav1.Time{Time: metav1.Unix(0, *st.CreationTime).Time}
		}
		size = st.RestoreSize
		ready = st.ReadyToUse != nil && *st.ReadyToUse
		if st.Error != nil {
			cerr = st.Error.DeepCopy()
		}
	}
	status := &snapv1.VolumeSnapshotStatus{}
	if current.Status != nil {
		status = current.Status.DeepCopy()
	}
	if status.BoundVolumeSnapshotContentName == nil {
		status.BoundVolumeSnapshotContentName = &name
	}
	if status.CreationTime == nil && created != nil {
		status.CreationTime = created
	}
	if g := c.groupSnapshotNameOf(content); g != "" && status.VolumeGroupSnapshotName == nil {
		status.VolumeGroupSnapshotName = &g
	}
	if status.ReadyToUse == nil || *status.ReadyToUse != ready {
		status.ReadyToUse = &ready
		if ready {
			status.Error = nil
		}
	}
	if size != nil && (status.RestoreSize == nil || (status.RestoreSize.IsZero() && *size > 0)) {
		status.RestoreSize = resource.NewQuantity(*size, resource.BinarySI)
	}
	if cerr != nil || status.Error != nil {
		status.Error = cerr
	}
	if current.Status != nil && equality.Semantic.DeepEqual(current.Status, status) {
		return current, nil
	}
	next := current.DeepCopy()
	next.Status = status
	// The events come before the write, as in the real controller.
	if (current.Status == nil || current.Status.CreationTime == nil) && status.CreationTime != nil {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeNormal, "SnapshotCreated",
			fmt.Sprintf("Snapshot %s was successfully created by the CSI driver.", snapshotKey(s)))
	}
	if !isReady(current) && isReady(next) {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeNormal, "SnapshotReady", fmt.Sprintf("Snapshot %s is ready to use.", snapshotKey(s)))
	}
	updated, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, updateError(snapshotKey(s), err)
	}
	return updated, nil
}

// updateErrorStatus records an error in the snapshot's status.error (and
// readyToUse false if asked) with an event; the same message already
// there is neither written nor reported again.
func (c *Controller) updateErrorStatus(ctx context.Context, s *snapv1.VolumeSnapshot, setReadyFalse bool, eventtype, reason, message string) error {
	if s.Status != nil && s.Status.Error != nil && s.Status.Error.Message != nil && *s.Status.Error.Message == message {
		return nil
	}
	next := s.DeepCopy()
	if next.Status == nil {
		next.Status = &snapv1.VolumeSnapshotStatus{}
	}
	now := metav1.NewTime(c.clock.Now())
	next.Status.Error = &snapv1.VolumeSnapshotError{Time: &now, Message: &message}
	if setReadyFalse {
		ready := false
		next.Status.ReadyToUse = &ready
	}
	updated, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	// The event goes out even when the write failed, about the object the
	// write returned, as the real controller's does: after a failed write
	// (a conflict, say) that is an empty VolumeSnapshot, and the event
	// names no object.
	if err != nil {
		updated = &snapv1.VolumeSnapshot{}
	}
	c.events.Event(volumeutil.WithKind(updated), eventtype, reason, message)
	return err
}

// checkAndAddSnapshotFinalizers puts the as-source finalizer on every
// snapshot, and the bound finalizer on one bound to a content whose
// deletionPolicy is Delete.
func (c *Controller) checkAndAddSnapshotFinalizers(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	var content *snapv1.VolumeSnapshotContent
	var err error
	if s.Spec.Source.VolumeSnapshotContentName != nil {
		content, err = c.preprovisionedContent(ctx, s)
	} else {
		content, err = c.dynamicContent(ctx, s)
	}
	if err != nil {
		return err
	}
	addSource := s.DeletionTimestamp == nil && !slices.Contains(s.Finalizers, volumeutil.VolumeSnapshotAsSourceFinalizer)
	addBound := content != nil && s.DeletionTimestamp == nil && !slices.Contains(s.Finalizers, volumeutil.VolumeSnapshotBoundFinalizer) &&
		boundContent(s) != "" && content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete
	if !addSource && !addBound {
		return nil
	}
	if len(s.Finalizers) == 0 {
		// With no finalizers yet the real controller writes the whole
		// object.
		next := s.DeepCopy()
		if addSource {
			next.Finalizers = append(next.Finalizers, volumeutil.VolumeSnapshotAsSourceFinalizer)
		}
		if addBound {
			next.Finalizers = append(next.Finalizers, volumeutil.VolumeSnapshotBoundFinalizer)
		}
		if _, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return updateError(snapshotKey(s), err)
		}
		return nil
	}
	var ops []patchOp
	if addSource {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: volumeutil.VolumeSnapshotAsSourceFinalizer})
	}
	if addBound {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/finalizers/-", Value: volumeutil.VolumeSnapshotBoundFinalizer})
	}
	if _, err := c.patchSnapshot(ctx, s, ops); err != nil {
		return updateError(snapshotKey(s), err)
	}
	return nil
}

// processSnapshotWithDeletionTimestamp: a snapshot being deleted marks
// its content being deleted, deletes the content if its policy is Delete,
// and drops its own finalizers — the bound one only once the content is
// gone.
func (c *Controller) processSnapshotWithDeletionTimestamp(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	name := boundContent(s)
	if name == "" && s.Spec.Source.PersistentVolumeClaimName != nil {
		name = volumeutil.SnapshotContentName(s)
	}
	content, err := c.contentFromCache(name)
	if err != nil {
		return err
	}
	deleteContent := false
	if content != nil && refersTo(content, s) {
		deleteContent = content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete
	} else {
		content = nil
	}
	if !slices.Contains(s.Finalizers, volumeutil.VolumeSnapshotAsSourceFinalizer) && !slices.Contains(s.Finalizers, volumeutil.VolumeSnapshotBoundFinalizer) {
		return nil
	}
	if content != nil && c.isVolumeBeingCreatedFromSnapshot(s) {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "SnapshotDeletePending", "Snapshot is being used to restore a PVC")
		return fmt.Errorf("snapshot %s is in use (being used to restore a PVC), will retry deletion", snapshotKey(s))
	}
	removeGroup, err := c.checkMemberDeletion(s)
	if err != nil {
		return err
	}
	if content != nil {
		if content, err = c.setAnnBeingDeleted(ctx, content); err != nil {
			return err
		}
	}
	if content != nil && deleteContent {
		err := c.snaps.SnapshotV1().VolumeSnapshotContents().Delete(ctx, content.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "SnapshotContentObjectDeleteError", "Failed to delete snapshot content API object")
			return fmt.Errorf("failed to delete VolumeSnapshotContent %s from API server: %q", content.Name, err)
		}
	}
	return c.removeSnapshotFinalizers(ctx, s, !(content != nil && deleteContent), removeGroup)
}

// isVolumeBeingCreatedFromSnapshot: a Pending claim restores from the
// snapshot.
func (c *Controller) isVolumeBeingCreatedFromSnapshot(s *snapv1.VolumeSnapshot) bool {
	claims, err := c.claims.PersistentVolumeClaims(s.Namespace).List(labels.Everything())
	if err != nil {
		return false
	}
	for _, claim := range claims {
		ds := claim.Spec.DataSource
		if ds != nil && ds.Name == s.Name && ds.Kind == snapshotKind && ds.APIGroup != nil && *ds.APIGroup == snapshotAPIGroup &&
			claim.Status.Phase == corev1.ClaimPending {
			return true
		}
	}
	return false
}

// removeSnapshotFinalizers drops the as-source finalizer, and the bound
// one if asked, after the source claim's finalizer if no other snapshot
// in progress needs it.
func (c *Controller) removeSnapshotFinalizers(ctx context.Context, s *snapv1.VolumeSnapshot, removeBound, removeGroup bool) error {
	if err := c.checkAndRemovePVCFinalizer(ctx, s, true); err != nil {
		c.events.Event(volumeutil.WithKind(s), corev1.EventTypeWarning, "ErrorPVCFinalizer", "Error check and remove PVC Finalizer for VolumeSnapshot")
		return updateError(s.Name, err)
	}
	next := s.DeepCopy()
	next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool {
		return f == volumeutil.VolumeSnapshotAsSourceFinalizer || (removeBound && f == volumeutil.VolumeSnapshotBoundFinalizer) ||
			(removeGroup && f == VolumeSnapshotInGroupFinalizer)
	})
	if len(next.Finalizers) == 0 {
		next.Finalizers = nil
	}
	if _, err := c.snaps.SnapshotV1().VolumeSnapshots(s.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return updateError(s.Name, err)
	}
	return nil
}

// ensurePVCFinalizer protects the source claim while its snapshot is
// taken.
func (c *Controller) ensurePVCFinalizer(ctx context.Context, s *snapv1.VolumeSnapshot) error {
	if s.Spec.Source.PersistentVolumeClaimName == nil {
		return nil
	}
	claim, err := c.claimOf(s)
	if err != nil {
		return updateError(s.Name, errors.New("cannot get claim from snapshot"))
	}
	if slices.Contains(claim.Finalizers, volumeutil.PVCAsSourceFinalizer) {
		return nil
	}
	if claim.DeletionTimestamp != nil {
		return updateError(claim.Name, errors.New("cannot add finalizer on claim because it is being deleted"))
	}
	next := claim.DeepCopy()
	next.Finalizers = append(next.Finalizers, volumeutil.PVCAsSourceFinalizer)
	if _, err := c.client.CoreV1().PersistentVolumeClaims(next.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return updateError(next.Name, err)
	}
	return nil
}

// checkAndRemovePVCFinalizer removes the source claim's finalizer once no
// snapshot of it (but this one, if skipCurrent) is still being taken.
func (c *Controller) checkAndRemovePVCFinalizer(ctx context.Context, s *snapv1.VolumeSnapshot, skipCurrent bool) error {
	if s.Spec.Source.PersistentVolumeClaimName == nil {
		return nil
	}
	claim, err := c.claimOf(s)
	if err != nil {
		return nil // the claim may be gone already
	}
	if !slices.Contains(claim.Finalizers, volumeutil.PVCAsSourceFinalizer) || c.isPVCBeingUsed(claim, s, skipCurrent) {
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := current.DeepCopy()
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == volumeutil.PVCAsSourceFinalizer })
		if len(next.Finalizers) == 0 {
			next.Finalizers = nil
		}
		_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return updateError(claim.Name, err)
	}
	return nil
}

// isPVCBeingUsed: a snapshot of the claim is not ready yet.
func (c *Controller) isPVCBeingUsed(claim *corev1.PersistentVolumeClaim, s *snapv1.VolumeSnapshot, skipCurrent bool) bool {
	snapshots, err := c.snapshots.VolumeSnapshots(s.Namespace).List(labels.Everything())
	if err != nil {
		return false
	}
	for _, other := range snapshots {
		if skipCurrent && other.Name == s.Name {
			continue
		}
		src := other.Spec.Source.PersistentVolumeClaimName
		if src != nil && *src == claim.Name && !isReady(other) {
			return true
		}
	}
	return false
}
