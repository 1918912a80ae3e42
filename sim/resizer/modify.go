package resizer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/csisim/csisim/sim/controller"
)

// The modify controller's events (external-resizer pkg/util/events.go).
const (
	EventVolumeModify          = "VolumeModify"
	EventVolumeModifyFailed    = "VolumeModifyFailed"
	EventVolumeModifySuccess   = "VolumeModifySuccessful"
	EventVolumeModifyCancelled = "VolumeModifyCanceled"
)

// DefaultModifyTimeout is the sidecar's --modify-timeout, the bound of
// every ControllerModifyVolume (external-resizer cmd/csi-resizer/main.go).
const DefaultModifyTimeout = 10 * time.Second

// Modifier is the external-resizer's modify controller (its
// pkg/modifycontroller), which the sidecar runs beside the resize
// controller when the driver reports MODIFY_VOLUME: a bound claim of its
// driver whose spec.volumeAttributesClassName differs from
// status.currentVolumeAttributesClassName gets ControllerModifyVolume with
// the class's parameters; status.modifyVolumeStatus, the ModifyingVolume
// and ModifyVolumeError conditions and the events say how it goes
// (modifystatus.go). A final error other than InvalidArgument keeps the
// claim InProgress; InvalidArgument makes it Infeasible, retried only
// after RetryIntervalMax, until the claim names another class (its old
// one rolls back).
type Modifier struct {
	driver  string
	client  kubernetes.Interface
	csi     csi.ControllerClient
	timeout time.Duration
	clock   clock.PassiveClock
	events  record.EventRecorder
	queue   controller.Queue

	claims  cache.Indexer
	volumes cache.Indexer
	classes storagelisters.VolumeAttributesClassLister

	mu sync.Mutex
	// started: the claims in progress were taken as uncertain, as the
	// sidecar does once its caches have synced.
	started bool
	// uncertain are the claims whose last ControllerModifyVolume ended
	// without a final answer: their target must not change until it
	// ends.
	uncertain keySet
	// slow are the claims whose modify was infeasible.
	slow *slowSet
}

// newModifier wires a modify controller to the factory's informers: the
// claims, the volumes and the VolumeAttributesClasses.
// cfg.Timeout is --modify-timeout.
func newModifier(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, ctrl csi.ControllerClient, rt controller.Runtime) *Modifier {
	driver := cfg.DriverName
	start, most := controller.Or(cfg.RetryIntervalStart, RetryIntervalStart), controller.Or(cfg.RetryIntervalMax, RetryIntervalMax)
	m := &Modifier{driver: driver, client: client, csi: ctrl, timeout: controller.Or(cfg.Timeout, DefaultModifyTimeout), clock: rt.Clock,
		queue: rt.NewQueueWithBackoff(driver+"-pvc-modify", start, most),
		slow:  newSlowSet(rt.Clock, most)}
	// Its own recorder, under the sidecar's name, as the real controller
	// makes one.
	m.events, _ = rt.NewEventRecorder(client, "external-resizer "+driver, "")
	pvcInf := factory.Core().V1().PersistentVolumeClaims().Informer()
	m.claims = pvcInf.GetIndexer()
	m.volumes = factory.Core().V1().PersistentVolumes().Informer().GetIndexer()
	m.classes = factory.Storage().V1().VolumeAttributesClasses().Lister()
	_, _ = pvcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.claimAdded,
		UpdateFunc: m.claimUpdated,
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				m.queue.Forget(key)
			}
		},
	})
	return m
}

// Workers is the modify controller's queue and sync function.
func (m *Modifier) Workers() []controller.Worker {
	return []controller.Worker{{Name: "modifier", Queue: m.queue, Sync: m.syncClaim}}
}

// Resync is the claim informer's resync every --resync-period, as the
// update handler sees it: the same claim as old and new.
func (m *Modifier) Resync(context.Context) {
	for _, obj := range m.claims.List() {
		m.claimUpdated(obj, obj)
	}
}

// claimAdded queues a new claim. The real handler queues every claim; a
// claim that names no class, has none and has no modify status gives a
// sync with nothing to do, so it is not queued: in the simulation's loop
// an idle key would still take its turn among the ready work.
func (m *Modifier) claimAdded(obj any) {
	if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && mayModify(claim) {
		m.enqueue(claim)
	}
}

// claimUpdated queues a bound claim whose class changed or whose modify
// has ended (no modifyVolumeStatus), if its volume is known
// (external-resizer pkg/modifycontroller/controller.go updatePVC).
func (m *Modifier) claimUpdated(oldObj, newObj any) {
	was, ok1 := oldObj.(*corev1.PersistentVolumeClaim)
	claim, ok2 := newObj.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 || !mayModify(claim) {
		return
	}
	changed := attributesClass(was) != attributesClass(claim)
	if (!changed && claim.Status.ModifyVolumeStatus != nil) || claim.Status.Phase != corev1.ClaimBound {
		return
	}
	if _, exists, err := m.volumes.GetByKey(was.Spec.VolumeName); err != nil || !exists {
		return
	}
	m.enqueue(claim)
}

// mayModify: a sync of the claim could do something.
func mayModify(claim *corev1.PersistentVolumeClaim) bool {
	return attributesClass(claim) != "" || ptr.Deref(claim.Status.CurrentVolumeAttributesClassName, "") != "" ||
		claim.Status.ModifyVolumeStatus != nil
}

func (m *Modifier) enqueue(claim *corev1.PersistentVolumeClaim) {
	if key, err := cache.MetaNamespaceKeyFunc(claim); err == nil {
		m.queue.Add(key)
	}
}

// syncClaim modifies the volume of a bound claim of this driver if it asks
// for it.
func (m *Modifier) syncClaim(ctx context.Context, key string) error {
	m.start()
	obj, exists, err := m.claims.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	claim := obj.(*corev1.PersistentVolumeClaim)
	if claim.Spec.VolumeName == "" {
		return nil
	}
	obj, exists, err = m.volumes.GetByKey(claim.Spec.VolumeName)
	if err == nil && !exists {
		err = apierrors.NewNotFound(corev1.Resource("persistentvolume"), claim.Spec.VolumeName)
	}
	if err != nil {
		return fmt.Errorf("Get PV %q of pvc %q in PVInformer cache failed: %v", claim.Spec.VolumeName, key, err)
	}
	pv := obj.(*corev1.PersistentVolume)
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != m.driver || claim.Status.Phase != corev1.ClaimBound {
		return nil
	}
	return m.modify(ctx, key, claim, pv)
}

// start takes the claims in progress as uncertain, once.
func (m *Modifier) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return
	}
	m.started = true
	for _, obj := range m.claims.List() {
		claim := obj.(*corev1.PersistentVolumeClaim)
		if s := claim.Status.ModifyVolumeStatus; s != nil && s.Status == corev1.PersistentVolumeClaimModifyVolumeInProgress {
			if key, err := cache.MetaNamespaceKeyFunc(claim); err == nil {
				m.uncertain.set(key, true)
			}
		}
	}
}

// modify decides what the claim asks for: nothing (its class is reached),
// a rollback (no class asked any more), the target of an uncertain modify
// that must end first, or its new class (external-resizer
// pkg/modifycontroller/modify_volume.go).
func (m *Modifier) modify(ctx context.Context, key string, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if err := m.delayIfRecentlyInfeasible(claim, key); err != nil {
		return err
	}
	target := attributesClass(claim)
	st := claim.Status.ModifyVolumeStatus
	if st == nil && target == ptr.Deref(claim.Status.CurrentVolumeAttributesClassName, "") {
		return nil
	}
	inProgress := st != nil && st.Status == corev1.PersistentVolumeClaimModifyVolumeInProgress
	if target == "" && !inProgress {
		return m.rolledBack(ctx, claim)
	}
	if (inProgress && m.uncertain.has(key)) || target == "" {
		vac, err := m.targetClass(claim, st.TargetVolumeAttributesClassName)
		if err != nil {
			return err
		}
		return m.modifyTo(ctx, key, claim, pv, vac)
	}
	vac, err := m.targetClass(claim, target)
	if err != nil {
		// The class does not exist (yet): Pending, and no retry.
		_, err = m.markStatus(ctx, claim, corev1.PersistentVolumeClaimModifyVolumePending, nil)
		return err
	}
	if claim, err = m.markStatus(ctx, claim, corev1.PersistentVolumeClaimModifyVolumeInProgress, nil); err != nil {
		return err
	}
	m.events.Event(claim, corev1.EventTypeNormal, EventVolumeModify,
		fmt.Sprintf("external resizer is modifying volume %s with vac %s", claim.Name, vac.Name))
	return m.modifyTo(ctx, key, claim, pv, vac)
}

// targetClass is the class named name, from the informer; one that does
// not exist is a warning event on the claim.
func (m *Modifier) targetClass(claim *corev1.PersistentVolumeClaim, name string) (*storagev1.VolumeAttributesClass, error) {
	vac, err := m.classes.Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			m.events.Eventf(claim, corev1.EventTypeWarning, EventVolumeModifyFailed, "VAC %q does not exist.", name)
		}
		return nil, fmt.Errorf("get VAC with vac name %s in VACInformer cache failed: %w", name, err)
	}
	return vac, nil
}

// modifyTo calls ControllerModifyVolume with the class's parameters and
// records the outcome: success, or the error, as Infeasible
// (InvalidArgument), InProgress after another final error, or an uncertain
// InProgress (a timeout, Unavailable...) whose target stays until it
// ends.
func (m *Modifier) modifyTo(ctx context.Context, key string, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, vac *storagev1.VolumeAttributesClass) error {
	claim, err := m.callModify(ctx, claim, pv, vac)
	if err == nil {
		m.events.Eventf(claim, corev1.EventTypeNormal, EventVolumeModifySuccess, "external resizer modified volume %s with vac %s successfully", claim.Name, vac.Name)
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("cannot get error status from modify volume err: %v", err)
	}
	msg := err.Error()
	outcome := corev1.PersistentVolumeClaimModifyVolumeInProgress
	if !finalError(err) {
		m.uncertain.set(key, true)
		msg += ". Still modifying to VAC " + vac.Name
	} else {
		if st.Code() == codes.InvalidArgument {
			outcome = corev1.PersistentVolumeClaimModifyVolumeInfeasible
		}
		m.uncertain.set(key, false)
	}
	claim, markErr := m.markStatus(ctx, claim, outcome, err)
	if markErr != nil {
		return markErr
	}
	m.markForSlowRetry(claim, key)
	m.events.Event(claim, corev1.EventTypeWarning, EventVolumeModifyFailed, msg)
	return err
}

// rolledBack ends a modify the claim no longer asks for: the ModifyingVolume
// condition goes, with a VolumeModifyCanceled event. The modify status
// stays, the record of the last modify.
func (m *Modifier) rolledBack(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if !hasConditionType(claim, corev1.PersistentVolumeClaimVolumeModifyingVolume) {
		return nil
	}
	m.events.Event(claim, corev1.EventTypeNormal, EventVolumeModifyCancelled, "Cancelled modify.")
	return m.markRolledBack(ctx, claim)
}

// delayIfRecentlyInfeasible holds back a claim whose modify to the class
// it still asks for was infeasible less than RetryIntervalMax ago; the
// error retries it with backoff, as any other.
func (m *Modifier) delayIfRecentlyInfeasible(claim *corev1.PersistentVolumeClaim, key string) error {
	st := claim.Status.ModifyVolumeStatus
	if st == nil || claim.Spec.VolumeAttributesClassName == nil || st.TargetVolumeAttributesClassName != *claim.Spec.VolumeAttributesClassName {
		m.slow.remove(key) // another class may be feasible
		return nil
	}
	recently := m.slow.contains(key)
	m.markForSlowRetry(claim, key)
	if recently {
		return fmt.Errorf("skipping volume modification for pvc %s, because modification previously failed with infeasible error", key)
	}
	return nil
}

// markForSlowRetry puts an Infeasible claim in the slow set.
func (m *Modifier) markForSlowRetry(claim *corev1.PersistentVolumeClaim, key string) {
	if s := claim.Status.ModifyVolumeStatus; s != nil && s.Status == corev1.PersistentVolumeClaimModifyVolumeInfeasible {
		m.slow.add(key)
	}
}

// attributesClass is the class the claim asks for, "" for none.
func attributesClass(claim *corev1.PersistentVolumeClaim) string {
	return ptr.Deref(claim.Spec.VolumeAttributesClassName, "")
}

func hasConditionType(claim *corev1.PersistentVolumeClaim, t corev1.PersistentVolumeClaimConditionType) bool {
	for _, c := range claim.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
