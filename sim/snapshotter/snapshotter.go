// Package snapshotter is the simulated csi-snapshotter sidecar of
// kubernetes-csi/external-snapshotter (its pkg/sidecar-controller): for
// every VolumeSnapshotContent of its driver it calls CreateSnapshot (a
// content made from a volume handle) or ListSnapshots (a pre-provisioned
// content's snapshot handle) and writes the result in the content's
// status; when the content's snapshot is being deleted it calls
// DeleteSnapshot if the deletionPolicy is Delete, and lets the content go.
package snapshotter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	grouplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumegroupsnapshot/v1"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/volumeutil"
)

// The sidecar's defaults (cmd/csi-snapshotter/main.go): --timeout,
// --retry-interval-start, --retry-interval-max, --snapshot-name-prefix,
// --snapshot-name-uuid-length.
const (
	DefaultTimeout     = time.Minute
	RetryIntervalStart = time.Second
	RetryIntervalMax   = 5 * time.Minute
	DefaultNamePrefix  = "snapshot"
)

// Config configures the sidecar.
type Config struct {
	DriverName string
	// Timeout bounds every CSI call; default DefaultTimeout.
	Timeout time.Duration
	// RetryIntervalStart and RetryIntervalMax are --retry-interval-start
	// and --retry-interval-max; default the package's constants.
	RetryIntervalStart, RetryIntervalMax time.Duration
	// NamePrefix starts the names of the snapshots asked for; default
	// DefaultNamePrefix.
	NamePrefix string
	// NameUUIDLength, if positive, cuts the snapshot's UID (without its
	// dashes) to that many characters in the name; 0 or -1 keeps it whole.
	NameUUIDLength int
}

// Snapshotter is one csi-snapshotter for one driver.
type Snapshotter struct {
	cfg      Config
	client   kubernetes.Interface
	snaps    snapclientset.Interface
	csi      csi.ControllerClient
	clock    clock.PassiveClock
	events   record.EventRecorder
	contents snaplisters.VolumeSnapshotContentLister
	classes  snaplisters.VolumeSnapshotClassLister
	queue    controller.Queue
	// The group path's (group.go).
	group         csi.GroupControllerClient
	groupContents grouplisters.VolumeGroupSnapshotContentLister
	groupClasses  grouplisters.VolumeGroupSnapshotClassLister
	groupQueue    controller.Queue
}

// New wires a csi-snapshotter to its informers and the controller plugin.
func New(cfg Config, client kubernetes.Interface, snaps snapclientset.Interface, snapFactory snapinformers.SharedInformerFactory,
	ctrl csi.ControllerClient, rt controller.Runtime) *Snapshotter {
	cfg.Timeout = controller.Or(cfg.Timeout, DefaultTimeout)
	cfg.RetryIntervalStart = controller.Or(cfg.RetryIntervalStart, RetryIntervalStart)
	cfg.RetryIntervalMax = controller.Or(cfg.RetryIntervalMax, RetryIntervalMax)
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = DefaultNamePrefix
	}
	// The sidecar's events name it and its driver
	// (sidecar-controller/snapshot_controller_base.go).
	events, _ := rt.NewEventRecorder(client, "csi-snapshotter "+cfg.DriverName, "")
	s := &Snapshotter{cfg: cfg, client: client, snaps: snaps, csi: ctrl, clock: rt.Clock, events: events,
		queue: rt.NewQueueWithBackoff("csi-snapshotter-content", cfg.RetryIntervalStart, cfg.RetryIntervalMax)}
	contentInf := snapFactory.Snapshot().V1().VolumeSnapshotContents()
	s.contents = contentInf.Lister()
	s.classes = snapFactory.Snapshot().V1().VolumeSnapshotClasses().Lister()
	_, _ = contentInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.enqueue,
		UpdateFunc: func(old, obj any) {
			if shouldEnqueueChange(old.(*snapv1.VolumeSnapshotContent), obj.(*snapv1.VolumeSnapshotContent)) {
				s.enqueue(obj)
			}
		},
		DeleteFunc: s.enqueue,
	})
	return s
}

// WithGroupController adds the group path, for a driver's GroupController
// service (group.go).
func (s *Snapshotter) WithGroupController(group csi.GroupControllerClient, snapFactory snapinformers.SharedInformerFactory, rt controller.Runtime) *Snapshotter {
	s.watchGroupContents(group, snapFactory, rt)
	return s
}

func (s *Snapshotter) enqueue(obj any) {
	if content, ok := controller.Unwrap(obj).(*snapv1.VolumeSnapshotContent); ok {
		s.queue.Add(content.Name)
	}
}

// ResyncPeriod is the sidecar's --resync-period (cmd/csi-snapshotter).
const ResyncPeriod = 15 * time.Minute

// Resync queues every content, as the informer's periodic resync does;
// run it every ResyncPeriod.
func (s *Snapshotter) Resync(context.Context) {
	contents, _ := s.contents.List(labels.Everything())
	for _, content := range contents {
		s.enqueue(content)
	}
	s.resyncGroups()
}

// Workers are the sidecar's queue and sync function.
func (s *Snapshotter) Workers() []controller.Worker {
	workers := []controller.Worker{{Name: "csi-snapshotter-content", Queue: s.queue, Sync: s.syncByKey}}
	if s.groupQueue != nil {
		workers = append(workers, controller.Worker{Name: "csi-snapshotter-groupsnapshotcontent", Queue: s.groupQueue, Sync: s.syncGroupByKey})
	}
	return workers
}

// Check is the sidecar's start-up check (controller.Check): the controller
// plugin must create and delete snapshots, else the real sidecar's main
// exits (cmd/csi-snapshotter/main.go).
func Check(ctx context.Context, d *controller.Driver) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	caps, err := driverinfo.AskController(callCtx, d.Controller)
	if err != nil {
		return controller.CheckFailed(fmt.Errorf("error determining if driver supports create/delete snapshot operations: %w", err))
	}
	d.Capabilities.Controller = caps
	if !caps[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT] {
		return fmt.Errorf("%w: CSI driver %s does not create and delete snapshots", controller.ErrExitsAtStart, d.Name)
	}
	return nil
}

// Start starts the sidecar in a simulated cluster (controller.Start) for
// d's driver, once Check has passed: its worker, and its resync every
// ResyncPeriod.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	s := New(Config{DriverName: d.Driver.Name, Timeout: d.Flags.Timeout, RetryIntervalStart: d.Flags.RetryIntervalStart,
		RetryIntervalMax: d.Flags.RetryIntervalMax}, d.Client, d.Snapshots, d.SnapshotInformers, d.Driver.Controller, d.Runtime)
	if d.Driver.GroupController != nil {
		s.WithGroupController(d.Driver.GroupController, d.SnapshotInformers, d.Runtime)
	}
	return controller.Component{Workers: s.Workers(), Periodic: []controller.Periodic{{Every: ResyncPeriod, Run: s.Resync}}}, nil
}

// errRequeue asks for the content to be synced again after the backoff:
// its snapshot is not ready yet.
var errRequeue = errors.New("snapshot not ready yet, checking again")

func (s *Snapshotter) syncByKey(ctx context.Context, name string) error {
	content, err := s.contents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !s.isDriverMatch(content) {
		return nil
	}
	requeue, err := s.syncContent(ctx, content)
	if err != nil {
		return fmt.Errorf("syncing VolumeSnapshotContent %s: %w", name, err)
	}
	if requeue {
		return errRequeue
	}
	return nil
}

// isDriverMatch: the content has a source and is for this driver (and so
// is its class, if it has one).
func (s *Snapshotter) isDriverMatch(content *snapv1.VolumeSnapshotContent) bool {
	if content.Spec.Source.VolumeHandle == nil && content.Spec.Source.SnapshotHandle == nil {
		return false
	}
	if content.Spec.Driver != s.cfg.DriverName {
		return false
	}
	if name := content.Spec.VolumeSnapshotClassName; name != nil {
		if class, err := s.classes.Get(*name); err == nil && class.Driver != s.cfg.DriverName {
			return false
		}
	}
	return true
}

// syncContent deletes, creates or checks the content's snapshot; it says
// whether to look again.
func (s *Snapshotter) syncContent(ctx context.Context, content *snapv1.VolumeSnapshotContent) (bool, error) {
	if shouldDelete(content) {
		// A group's member is deleted with its group
		// (DeleteVolumeGroupSnapshot, group.go), never on its own.
		if content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete && content.Status != nil && content.Status.SnapshotHandle != nil &&
			content.Status.VolumeGroupSnapshotHandle == nil {
			var err error
			if content, err = s.deleteSnapshot(ctx, content); err != nil {
				return true, err
			}
		}
		return false, s.removeContentFinalizer(ctx, content)
	}
	// A group's member was cut with its group: never CreateSnapshot.
	if _, member := content.Annotations[groupMemberAnnotation]; content.Spec.Source.VolumeHandle != nil && content.Status == nil && !member {
		return s.createSnapshot(ctx, content)
	}
	if isReady(content) {
		_, err := s.removeAnnBeingCreated(ctx, content)
		return err != nil, err
	}
	return s.checkAndUpdateContentStatus(ctx, content)
}

// shouldDelete: the content is being deleted and it is time to act — not
// while CreateSnapshot may still be in progress.
func shouldDelete(content *snapv1.VolumeSnapshotContent) bool {
	if content.DeletionTimestamp == nil {
		return false
	}
	if content.Spec.Source.SnapshotHandle != nil && content.Spec.VolumeSnapshotRef.UID == "" {
		return true // a pre-provisioned content never bound
	}
	if _, ok := content.Annotations[volumeutil.AnnSnapshotBeingCreated]; ok {
		return false
	}
	_, ok := content.Annotations[volumeutil.AnnSnapshotBeingDeleted]
	return ok
}

func isReady(content *snapv1.VolumeSnapshotContent) bool {
	return content.Status != nil && content.Status.ReadyToUse != nil && *content.Status.ReadyToUse
}

func (s *Snapshotter) createSnapshot(ctx context.Context, content *snapv1.VolumeSnapshotContent) (bool, error) {
	updated, err := s.createSnapshotWrapper(ctx, content)
	if err != nil {
		s.updateErrorStatus(ctx, updated, corev1.EventTypeWarning, "SnapshotCreationFailed", fmt.Sprintf("Failed to create snapshot: %v", err))
		return true, err
	}
	return !isReady(updated), nil
}

func (s *Snapshotter) checkAndUpdateContentStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent) (bool, error) {
	updated, err := s.checkAndUpdateContentStatusOperation(ctx, content)
	if err != nil {
		s.updateErrorStatus(ctx, updated, corev1.EventTypeWarning, "SnapshotContentCheckandUpdateFailed",
			fmt.Sprintf("Failed to check and update snapshot content: %v", err))
		return true, err
	}
	return !isReady(updated), nil
}

// checkAndUpdateContentStatusOperation asks the driver about a
// pre-provisioned snapshot (ListSnapshots), or creates the snapshot again
// (CreateSnapshot is idempotent) until it is ready.
func (s *Snapshotter) checkAndUpdateContentStatusOperation(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	handle := ""
	if h := content.Spec.Source.SnapshotHandle; h != nil {
		handle = *h
	} else if _, member := content.Annotations[groupMemberAnnotation]; !member {
		return s.createSnapshotWrapper(ctx, content)
	} else if st := content.Status; st != nil && st.SnapshotHandle != nil && st.VolumeGroupSnapshotHandle != nil {
		handle = *st.SnapshotHandle // a group's member: asked about, never cut alone
	} else {
		return content, nil
	}
	var credentials map[string]string
	if name := content.Spec.VolumeSnapshotClassName; name != nil {
		class, err := s.classes.Get(*name)
		if err != nil {
			return content, fmt.Errorf("failed to get snapshot class %s for snapshot content %s: %v", *name, content.Name, err)
		}
		ref, err := volumeutil.SnapshotSecretReference(volumeutil.SnapshotterListSecret, class.Parameters, content.Name, nil)
		if err != nil {
			return content, fmt.Errorf("failed to get secret reference for snapshot content %s: %v", content.Name, err)
		}
		if credentials, err = s.credentials(ctx, ref); err != nil {
			return content, fmt.Errorf("failed to get credentials for snapshot content %s: %v", content.Name, err)
		}
	}
	ready, created, size, err := s.snapshotStatus(ctx, content, handle, credentials)
	if err != nil {
		return content, err
	}
	if created.IsZero() {
		created = s.clock.Now()
	}
	return s.updateContentStatus(ctx, content, handle, ready, created.UnixNano(), size)
}

// snapshotStatus asks the driver for a snapshot with ListSnapshots; a
// driver that cannot list snapshots has it ready.
func (s *Snapshotter) snapshotStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent, handle string, credentials map[string]string) (bool, time.Time, int64, error) {
	callCtx, cancel := csiclient.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// The sidecar asks for the capabilities before every status check
	// (pkg/snapshotter isListSnapshotsSupported).
	caps, err := driverinfo.AskController(callCtx, s.csi)
	if err != nil {
		return false, time.Time{}, 0, fmt.Errorf("failed to list snapshot for content %s: %q", content.Name,
			fmt.Errorf("failed to check if ListSnapshots is supported: %s", err))
	}
	if !caps[csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS] {
		return true, time.Time{}, 0, nil
	}
	resp, err := s.csi.ListSnapshots(callCtx, &csi.ListSnapshotsRequest{SnapshotId: handle, Secrets: credentials})
	if err == nil && len(resp.GetEntries()) == 0 {
		err = fmt.Errorf("can not find snapshot for snapshotID %s", handle)
	}
	if err != nil {
		return false, time.Time{}, 0, fmt.Errorf("failed to list snapshot for content %s: %q", content.Name, err)
	}
	snap := resp.GetEntries()[0].GetSnapshot()
	return snap.GetReadyToUse(), snap.GetCreationTime().AsTime(), snap.GetSizeBytes(), nil
}

// createSnapshotWrapper calls CreateSnapshot, marking the content while
// the call may be in progress, and writes the result in its status.
func (s *Snapshotter) createSnapshotWrapper(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	class, credentials, err := s.createInput(ctx, content)
	if err != nil {
		return content, fmt.Errorf("failed to get input parameters to create snapshot for content %s: %q", content.Name, err)
	}
	if content, err = s.setAnnBeingCreated(ctx, content); err != nil {
		return content, fmt.Errorf("failed to add VolumeSnapshotBeingCreated annotation on the content %s: %q", content.Name, err)
	}
	params, err := driverParameters(class.Parameters)
	if err != nil {
		return content, fmt.Errorf("failed to remove CSI Parameters of prefixed keys: %v", err)
	}
	volume := *content.Spec.Source.VolumeHandle
	snap, err := s.callCreateSnapshot(ctx, content, params, credentials)
	if err != nil {
		if isFinalError(err) {
			var rerr error
			if content, rerr = s.removeAnnBeingCreated(ctx, content); rerr != nil {
				return content, fmt.Errorf("failed to remove VolumeSnapshotBeingCreated annotation from the content %s: %s", content.Name, rerr)
			}
		}
		return content, fmt.Errorf("failed to take snapshot of the volume %s: %q", volume, err)
	}
	created := snap.GetCreationTime().AsTime()
	if snap.GetCreationTime() == nil {
		created = s.clock.Now()
	}
	updated, err := s.updateContentStatus(ctx, content, snap.GetSnapshotId(), snap.GetReadyToUse(), created.UnixNano(), snap.GetSizeBytes())
	if err != nil {
		return content, fmt.Errorf("error updating status for volume snapshot content %s: %v", content.Name, err)
	}
	if updated, err = s.removeAnnBeingCreated(ctx, updated); err != nil {
		return updated, fmt.Errorf("failed to remove VolumeSnapshotBeingCreated annotation on the content %s: %q", updated.Name, err)
	}
	return updated, nil
}

// callCreateSnapshot makes the request as the sidecar does: the name is
// the prefix and the snapshot's UID (csi_handler.go makeSnapshotName).
func (s *Snapshotter) callCreateSnapshot(ctx context.Context, content *snapv1.VolumeSnapshotContent, params, credentials map[string]string) (*csi.Snapshot, error) {
	if content.Spec.VolumeSnapshotRef.UID == "" {
		return nil, fmt.Errorf("cannot create snapshot. Snapshot content %s not bound to a snapshot", content.Name)
	}
	name, err := SnapshotName(s.cfg.NamePrefix, string(content.Spec.VolumeSnapshotRef.UID), s.cfg.NameUUIDLength)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	resp, err := s.csi.CreateSnapshot(callCtx, &csi.CreateSnapshotRequest{
		SourceVolumeId: *content.Spec.Source.VolumeHandle, Name: name, Parameters: params, Secrets: credentials})
	if err != nil {
		return nil, err
	}
	return resp.GetSnapshot(), nil
}

// SnapshotName is the name the sidecar asks CreateSnapshot for: prefix,
// "-" and the snapshot's UID, or its first uuidLength characters without
// dashes.
func SnapshotName(prefix, uid string, uuidLength int) (string, error) {
	if uid == "" {
		return "", errors.New("Corrupted snapshot object, it is missing UID")
	}
	if uuidLength <= 0 {
		return prefix + "-" + uid, nil
	}
	short := strings.ReplaceAll(uid, "-", "")
	return prefix + "-" + short[:min(uuidLength, len(short))], nil
}

// createInput: the content's class and the credentials of the secret the
// snapshot-controller recorded on it.
func (s *Snapshotter) createInput(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotClass, map[string]string, error) {
	name := content.Spec.VolumeSnapshotClassName
	if name == nil {
		return nil, nil, fmt.Errorf("failed to take snapshot %s without a snapshot class", content.Name)
	}
	class, err := s.classes.Get(*name)
	if err != nil {
		return nil, nil, err
	}
	credentials, err := s.credentialsFromAnnotations(ctx, content)
	if err != nil {
		return nil, nil, err
	}
	return class, credentials, nil
}

// credentialsFromAnnotations reads the secret the content's deletion-secret
// annotations name.
func (s *Snapshotter) credentialsFromAnnotations(ctx context.Context, content *snapv1.VolumeSnapshotContent) (map[string]string, error) {
	name, hasName := content.Annotations[volumeutil.AnnSnapshotDeletionSecretName]
	ns, hasNS := content.Annotations[volumeutil.AnnSnapshotDeletionSecretNamespace]
	if !hasName || !hasNS {
		return nil, nil
	}
	if name == "" || ns == "" {
		return nil, fmt.Errorf("cannot retrieve secrets for snapshot content %#v, err: secret name or namespace not specified", content.Name)
	}
	credentials, err := s.credentials(ctx, &corev1.SecretReference{Name: name, Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("cannot get credentials for snapshot content %#v", content.Name)
	}
	return credentials, nil
}

func (s *Snapshotter) credentials(ctx context.Context, ref *corev1.SecretReference) (map[string]string, error) {
	return volumeutil.SecretData(ctx, s.client, ref)
}

// driverParameters are the class's parameters without the
// csi.storage.k8s.io/ ones the sidecar knows; another of that prefix is an
// error.
func driverParameters(params map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range params {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			out[k] = v
			continue
		}
		if !slices.Contains(knownPrefixedParameters, k) {
			return map[string]string{}, fmt.Errorf("found unknown parameter key \"%s\" with reserved namespace %s", k, "csi.storage.k8s.io/")
		}
	}
	return out, nil
}

// knownPrefixedParameters are the csi.storage.k8s.io/ parameters of a
// snapshot class (pkg/utils RemovePrefixedParameters).
var knownPrefixedParameters = []string{
	"csi.storage.k8s.io/snapshotter-secret-name", "csi.storage.k8s.io/snapshotter-secret-namespace",
	"csi.storage.k8s.io/snapshotter-list-secret-name", "csi.storage.k8s.io/snapshotter-list-secret-namespace",
	"csi.storage.k8s.io/group-snapshotter-get-secret-name", "csi.storage.k8s.io/group-snapshotter-get-secret-namespace",
	"csi.storage.k8s.io/group-snapshotter-secret-name", "csi.storage.k8s.io/group-snapshotter-secret-namespace",
}

// isFinalError: the call certainly ended, the snapshot is not being made.
func isFinalError(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// deleteSnapshot calls DeleteSnapshot and clears the snapshot out of the
// content's status.
func (s *Snapshotter) deleteSnapshot(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	credentials, err := s.credentialsFromAnnotations(ctx, content)
	if err != nil {
		s.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "SnapshotDeleteError", "Failed to get snapshot credentials")
		return content, fmt.Errorf("failed to get input parameters to delete snapshot for content %s: %q", content.Name, err)
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, s.cfg.Timeout)
	_, err = s.csi.DeleteSnapshot(callCtx, &csi.DeleteSnapshotRequest{SnapshotId: *content.Status.SnapshotHandle, Secrets: credentials})
	cancel()
	if err != nil {
		s.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "SnapshotDeleteError", "Failed to delete snapshot")
		return content, fmt.Errorf("failed to delete snapshot %#v, err: %v", content.Name,
			fmt.Errorf("failed to delete snapshot content %s: %q", content.Name, err))
	}
	current, err := s.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil {
		s.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "SnapshotDeleteError", "Failed to clear content status")
		return content, fmt.Errorf("error get snapshot content %s from api server: %v", content.Name, err)
	}
	if current.Status != nil {
		current.Status.SnapshotHandle, current.Status.ReadyToUse, current.Status.CreationTime, current.Status.RestoreSize = nil, nil, nil, nil
	}
	updated, err := s.snaps.SnapshotV1().VolumeSnapshotContents().UpdateStatus(ctx, current, metav1.UpdateOptions{})
	if err != nil {
		s.events.Event(volumeutil.WithKind(content), corev1.EventTypeWarning, "SnapshotDeleteError", "Failed to clear content status")
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

// updateContentStatus writes what the driver said into the content's
// status, keeping what is there already.
func (s *Snapshotter) updateContentStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent, handle string, ready bool, createdAt, size int64) (*snapv1.VolumeSnapshotContent, error) {
	current, err := s.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("error get snapshot content %s from api server: %v", content.Name, err)
	}
	st := &snapv1.VolumeSnapshotContentStatus{}
	if current.Status != nil {
		st = current.Status.DeepCopy()
	}
	if st.SnapshotHandle == nil {
		st.SnapshotHandle = &handle
	}
	if st.ReadyToUse == nil || *st.ReadyToUse != ready {
		st.ReadyToUse = &ready
		if ready {
			st.Error = nil
		}
	}
	if st.CreationTime == nil {
		st.CreationTime = &createdAt
	}
	if st.RestoreSize == nil && size > 0 {
		st.RestoreSize = &size
	}
	if current.Status != nil && equality.Semantic.DeepEqual(current.Status, st) {
		return current, nil
	}
	updated, err := s.patch(ctx, current, []patchOp{{Op: "replace", Path: "/status", Value: st}}, "status")
	if err != nil {
		return current, updateError(content.Name, err)
	}
	return updated, nil
}

// updateErrorStatus records an error in the content's status with an
// event, unless the same message is there already.
func (s *Snapshotter) updateErrorStatus(ctx context.Context, content *snapv1.VolumeSnapshotContent, eventtype, reason, message string) {
	if content.Status != nil && content.Status.Error != nil && content.Status.Error.Message != nil && *content.Status.Error.Message == message {
		return
	}
	ready := false
	now := metav1.NewTime(s.clock.Now())
	cerr := &snapv1.VolumeSnapshotError{Time: &now, Message: &message}
	ops := []patchOp{{Op: "replace", Path: "/status", Value: &snapv1.VolumeSnapshotContentStatus{ReadyToUse: &ready, Error: cerr}}}
	if content.Status != nil {
		ops = []patchOp{{Op: "replace", Path: "/status/error", Value: cerr}, {Op: "replace", Path: "/status/readyToUse", Value: &ready}}
	}
	_, _ = s.patch(ctx, content, ops, "status")
	s.events.Event(volumeutil.WithKind(content), eventtype, reason, message)
}

// setAnnBeingCreated marks the content: CreateSnapshot is being asked.
func (s *Snapshotter) setAnnBeingCreated(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	if _, ok := content.Annotations[volumeutil.AnnSnapshotBeingCreated]; ok {
		return content, nil
	}
	annotations := volumeutil.WithAnnotation(content.Annotations, volumeutil.AnnSnapshotBeingCreated, "yes")
	updated, err := s.patch(ctx, content, []patchOp{{Op: "replace", Path: "/metadata/annotations", Value: annotations}})
	if err != nil {
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

// removeAnnBeingCreated: the driver has answered for good.
func (s *Snapshotter) removeAnnBeingCreated(ctx context.Context, content *snapv1.VolumeSnapshotContent) (*snapv1.VolumeSnapshotContent, error) {
	if _, ok := content.Annotations[volumeutil.AnnSnapshotBeingCreated]; !ok {
		return content, nil
	}
	path := "/metadata/annotations/" + strings.ReplaceAll(volumeutil.AnnSnapshotBeingCreated, "/", "~1")
	updated, err := s.patch(ctx, content, []patchOp{{Op: "remove", Path: path}})
	if err != nil {
		return content, updateError(content.Name, err)
	}
	return updated, nil
}

// removeContentFinalizer lets the content go.
func (s *Snapshotter) removeContentFinalizer(ctx context.Context, content *snapv1.VolumeSnapshotContent) error {
	if !slices.Contains(content.Finalizers, volumeutil.VolumeSnapshotContentFinalizer) {
		return nil
	}
	rest := slices.DeleteFunc(slices.Clone(content.Finalizers), func(f string) bool { return f == volumeutil.VolumeSnapshotContentFinalizer })
	if len(rest) == 0 {
		rest = nil
	}
	if _, err := s.patch(ctx, content, []patchOp{{Op: "replace", Path: "/metadata/finalizers", Value: rest}}); err != nil {
		return updateError(content.Name, err)
	}
	return nil
}

// shouldEnqueueChange leaves out updates that change only the status,
// the finalizers or the sidecar's own annotation — the sidecar's own
// writes — unless the content just became ready (pkg/utils
// ShouldEnqueueContentChange).
func shouldEnqueueChange(old, cur *snapv1.VolumeSnapshotContent) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true
	}
	if !isReady(old) && isReady(cur) {
		return true
	}
	sanitized := cur.DeepCopy()
	sanitized.ResourceVersion = old.ResourceVersion
	sanitized.Status = old.Status
	sanitized.ManagedFields = old.ManagedFields
	sanitized.Finalizers = old.Finalizers
	if sanitized.Annotations == nil && old.Annotations != nil {
		sanitized.Annotations = map[string]string{}
	}
	if v, ok := old.Annotations[volumeutil.AnnSnapshotBeingCreated]; ok {
		sanitized.Annotations[volumeutil.AnnSnapshotBeingCreated] = v
	} else {
		delete(sanitized.Annotations, volumeutil.AnnSnapshotBeingCreated)
	}
	return !equality.Semantic.DeepEqual(old, sanitized)
}

// patchOp is one operation of a JSON patch, the way the sidecar writes
// (pkg/utils/patch.go).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func (s *Snapshotter) patch(ctx context.Context, content *snapv1.VolumeSnapshotContent, ops []patchOp, subresources ...string) (*snapv1.VolumeSnapshotContent, error) {
	data, err := json.Marshal(ops)
	if err != nil {
		return content, err
	}
	updated, err := s.snaps.SnapshotV1().VolumeSnapshotContents().Patch(ctx, content.Name, types.JSONPatchType, data, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return content, err
	}
	return updated, nil
}

// updateError is the sidecar's controllerUpdateError
// (sidecar-controller/snapshot_controller.go).
func updateError(name string, err error) error {
	return fmt.Errorf("snapshot controller failed to update %s on API server: %s", name, err)
}
