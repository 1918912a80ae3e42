// Package pvcontroller is the simulated PersistentVolume controller of
// kube-controller-manager: it binds claims to volumes, hands dynamic
// provisioning to the external provisioner through the storage-provisioner
// annotation, tracks volume and claim phases, and runs the pvc-protection
// and pv-protection finalizer controllers.
package pvcontroller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

// Annotations and finalizers the real PV controller and API server use.
const (
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	AnnBindCompleted          = "pv.kubernetes.io/bind-completed"
	AnnBoundByController      = "pv.kubernetes.io/bound-by-controller"
	AnnSelectedNode           = "volume.kubernetes.io/selected-node"
	PVCProtectionFinalizer    = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer     = "kubernetes.io/pv-protection"
)

// Controller is the PV controller plus the two protection controllers.
// claimRefIndex indexes volumes by the namespace/name of their claimRef.
const claimRefIndex = "claimRef"

type Controller struct {
	volumeIndex cache.Indexer
	clock       clock.PassiveClock
	client      kubernetes.Interface
	events      record.EventRecorder
	claims      corelisters.PersistentVolumeClaimLister
	volumes     corelisters.PersistentVolumeLister
	classes     storagelisters.StorageClassLister
	pods        corelisters.PodLister
	claimQ      controller.Queue
	volumeQ     controller.Queue
	synced      []cache.InformerSynced
	stopRecs    func()
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	events, stop := rt.NewEventRecorder(client, "persistentvolume-controller", "")
	c := &Controller{
		clock:    rt.Clock,
		client:   client,
		events:   events,
		stopRecs: stop,
		claimQ:   rt.NewQueue("claims"),
		volumeQ:  rt.NewQueue("volumes"),
	}
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	podInf := factory.Core().V1().Pods()
	scInf := factory.Storage().V1().StorageClasses()
	c.claims, c.volumes, c.classes, c.pods = pvcInf.Lister(), pvInf.Lister(), scInf.Lister(), podInf.Lister()
	// Volumes by the claim they name, so finding a claim's volume does not
	// walk every volume.
	_ = pvInf.Informer().AddIndexers(cache.Indexers{claimRefIndex: func(obj any) ([]string, error) {
		if ref := obj.(*corev1.PersistentVolume).Spec.ClaimRef; ref != nil {
			return []string{ref.Namespace + "/" + ref.Name}, nil
		}
		return nil, nil
	}})
	c.volumeIndex = pvInf.Informer().GetIndexer()
	_, _ = pvcInf.Informer().AddEventHandler(controller.EnqueueHandler(c.claimQ))
	_, _ = pvInf.Informer().AddEventHandler(controller.EnqueueHandler(c.volumeQ))
	// A claim that goes releases its volume.
	_, _ = pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		obj = controller.Unwrap(obj)
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && claim.Spec.VolumeName != "" {
			c.volumeQ.Add(claim.Spec.VolumeName)
		}
	}})
	// A claim's protection depends on the pods that use it.
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueuePodClaims,
		UpdateFunc: func(_, obj any) { c.enqueuePodClaims(obj) },
		DeleteFunc: c.enqueuePodClaims,
	})
	c.synced = []cache.InformerSynced{pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced,
		podInf.Informer().HasSynced, scInf.Informer().HasSynced}
	return c
}

func (c *Controller) enqueuePodClaims(obj any) {
	obj = controller.Unwrap(obj)
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			c.claimQ.Add(pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
		}
	}
}

// Run processes claims and volumes until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	defer c.stopRecs()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	go wait.UntilWithContext(ctx, c.Resync, SyncPeriod)
	controller.RunAll(ctx, c.Workers()...)
}

// Workers are the controller's queues and sync functions.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{
		{Name: "pv-controller-claims", Queue: c.claimQ, Sync: c.syncClaim},
		{Name: "pv-controller-volumes", Queue: c.volumeQ, Sync: c.syncVolume},
	}
}

// SyncPeriod is how often every claim and volume is synced again, as the
// real controller's --pvclaimbinder-sync-period (15 s). It is what binds a
// claim whose storage class or matching volume appeared after the claim:
// the controller does not watch for those.
const SyncPeriod = 15 * time.Second

// Resync queues every claim and volume; run it every SyncPeriod.
func (c *Controller) Resync(context.Context) {
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		c.claimQ.Add(claim.Namespace + "/" + claim.Name)
	}
	volumes, _ := c.volumes.List(labels.Everything())
	for _, v := range volumes {
		c.volumeQ.Add(v.Name)
	}
}

func (c *Controller) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Its volume learns of it through its own sync.
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp != nil {
		return c.releaseClaimProtection(ctx, claim)
	}
	if err := c.syncUnusedCondition(ctx, claim); err != nil {
		return err
	}
	if claim.Spec.VolumeName == "" {
		return c.syncUnboundClaim(ctx, claim)
	}
	return c.syncBoundClaim(ctx, claim)
}

// syncUnboundClaim binds the claim to a volume that is pre-bound to it or
// matches it, or asks the external provisioner for one.
func (c *Controller) syncUnboundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	// With WaitForFirstConsumer the scheduler chooses the volume (or the
	// node to provision on); the controller binds only what is pre-bound.
	delayed := c.delayBinding(claim)
	pv, err := c.findVolumeFor(claim, delayed)
	if err != nil {
		return err
	}
	if pv != nil {
		return c.bind(ctx, claim, pv)
	}
	className := storageClassName(claim)
	if className == "" {
		if claim.Status.Phase == corev1.ClaimPending {
			c.events.Event(claim, corev1.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		}
		return nil // a matching volume may come; the resync looks again
	}
	class, err := c.classes.Get(className)
	if apierrors.IsNotFound(err) {
		c.events.Eventf(claim, corev1.EventTypeWarning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", className)
		return nil
	}
	if err != nil {
		return err
	}
	if delayed && claim.Annotations[AnnSelectedNode] == "" {
		c.events.Event(claim, corev1.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
		return nil
	}
	if claim.Annotations[AnnStorageProvisioner] == class.Provisioner {
		return nil // already handed over
	}
	updated := claim.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[AnnStorageProvisioner] = class.Provisioner
	updated.Annotations[AnnBetaStorageProvisioner] = class.Provisioner
	if _, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("handing claim %s/%s to provisioner %s: %w", claim.Namespace, claim.Name, class.Provisioner, err)
	}
	c.events.Eventf(claim, corev1.EventTypeNormal, "ExternalProvisioning",
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
			"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner)
	return nil
}

// delayBinding: the claim's class binds at the first consumer.
func (c *Controller) delayBinding(claim *corev1.PersistentVolumeClaim) bool {
	class, err := c.classes.Get(storageClassName(claim))
	return err == nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// findVolumeFor returns the volume the claim should bind to, or nil; with
// delayed binding only a volume pre-bound to the claim.
func (c *Controller) findVolumeFor(claim *corev1.PersistentVolumeClaim, delayed bool) (*corev1.PersistentVolume, error) {
	// A volume pre-bound to the claim is found through the index; matching
	// by class, modes, size and labels needs every volume.
	objs, err := c.volumeIndex.ByIndex(claimRefIndex, claim.Namespace+"/"+claim.Name)
	if err != nil {
		return nil, err
	}
	var prebound []*corev1.PersistentVolume
	for _, obj := range objs {
		prebound = append(prebound, obj.(*corev1.PersistentVolume))
	}
	if pv := bestMatch(claim, prebound); pv != nil || delayed {
		return pv, nil
	}
	all, err := c.volumes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return bestMatch(claim, all), nil
}

// bind completes the binding on both objects, volume first, as the real
// controller does, so a crash in between leaves a state it can finish.
func (c *Controller) bind(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		v := pv.DeepCopy()
		// Only a binding the controller chose is marked as its own; a
		// volume an admin pre-bound by name just gets the claim's UID.
		ref := pv.Spec.ClaimRef
		if ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name {
			setAnnotation(&v.ObjectMeta, AnnBoundByController, "yes")
		}
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion}
		var err error
		if pv, err = c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding volume %s to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
		}
	}
	if err := c.setVolumePhase(ctx, pv, corev1.VolumeBound); err != nil {
		return err
	}
	cl := claim.DeepCopy()
	cl.Spec.VolumeName = pv.Name
	setAnnotation(&cl.ObjectMeta, AnnBindCompleted, "yes")
	setAnnotation(&cl.ObjectMeta, AnnBoundByController, "yes")
	updated, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("binding claim %s/%s to volume %s: %w", claim.Namespace, claim.Name, pv.Name, err)
	}
	return c.setClaimBound(ctx, updated, pv)
}

func (c *Controller) syncBoundClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		if claim.Status.Phase == corev1.ClaimBound {
			c.events.Event(claim, corev1.EventTypeWarning, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
			cl := claim.DeepCopy()
			cl.Status.Phase = corev1.ClaimLost
			_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		return c.bind(ctx, claim, pv)
	}
	if claim.Status.Phase != corev1.ClaimBound {
		return c.setClaimBound(ctx, claim, pv)
	}
	return nil
}

func (c *Controller) setClaimBound(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if claim.Status.Phase == corev1.ClaimBound {
		return nil
	}
	cl := claim.DeepCopy()
	cl.Status.Phase = corev1.ClaimBound
	cl.Status.AccessModes = pv.Spec.AccessModes
	cl.Status.Capacity = pv.Spec.Capacity
	if _, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("marking claim %s/%s Bound: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return c.releaseVolumeProtection(ctx, pv)
	}
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable)
	}
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if claim == nil || (ref.UID != "" && claim.UID != ref.UID) {
		// The claim is gone: the volume is Released, and what happens to it
		// depends on its reclaim policy. For Delete, the external
		// provisioner that made it deletes it.
		if pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed {
			return nil
		}
		if pv.Status.Phase != corev1.VolumeBound {
			// Never bound (pre-bound to a claim that is not there yet).
			return c.setVolumePhase(ctx, pv, corev1.VolumeAvailable)
		}
		return c.setVolumePhase(ctx, pv, corev1.VolumeReleased)
	}
	if claim.Spec.VolumeName == "" {
		// Pre-bound (by a provisioner or an admin) and waiting for the
		// claim's sync to finish the binding: hurry that along.
		c.claimQ.Add(claim.Namespace + "/" + claim.Name)
		return nil
	}
	if claim.Spec.VolumeName == pv.Name {
		return c.setVolumePhase(ctx, pv, corev1.VolumeBound)
	}
	return nil
}

func (c *Controller) setVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase) error {
	if pv.Status.Phase == phase {
		return nil
	}
	v := pv.DeepCopy()
	v.Status.Phase = phase
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	v.Status.LastPhaseTransitionTime = &now
	if _, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, v, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting volume %s phase %s: %w", pv.Name, phase, err)
	}
	return nil
}

// releaseClaimProtection removes kubernetes.io/pvc-protection from a
// deleted claim once no pod that may still run uses it.
func (c *Controller) releaseClaimProtection(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	if !slices.Contains(claim.Finalizers, PVCProtectionFinalizer) {
		return nil
	}
	pods, err := c.pods.Pods(claim.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
				return nil // in use; the pod's deletion enqueues the claim again
			}
		}
	}
	cl := claim.DeepCopy()
	cl.Finalizers = slices.DeleteFunc(cl.Finalizers, func(f string) bool { return f == PVCProtectionFinalizer })
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// releaseVolumeProtection removes kubernetes.io/pv-protection from a
// deleted volume that is no longer Bound.
func (c *Controller) releaseVolumeProtection(ctx context.Context, pv *corev1.PersistentVolume) error {
	if !slices.Contains(pv.Finalizers, PVProtectionFinalizer) || pv.Status.Phase == corev1.VolumeBound {
		return nil
	}
	v := pv.DeepCopy()
	v.Finalizers = slices.DeleteFunc(v.Finalizers, func(f string) bool { return f == PVProtectionFinalizer })
	_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func storageClassName(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return ""
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

// The claim condition a v1.37 control plane keeps: whether a pod uses the
// claim.
const (
	conditionUnused      corev1.PersistentVolumeClaimConditionType = "Unused"
	reasonPodUsingPVC                                              = "PodUsingPVC"
	reasonNoPodsUsingPVC                                           = "NoPodsUsingPVC"
)

// syncUnusedCondition sets the claim's Unused condition from the pods that
// may still run and use it.
func (c *Controller) syncUnusedCondition(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	used, err := c.usedByPod(claim)
	if err != nil {
		return err
	}
	want := corev1.PersistentVolumeClaimCondition{Type: conditionUnused, Status: corev1.ConditionTrue, Reason: reasonNoPodsUsingPVC}
	if used {
		want.Status, want.Reason = corev1.ConditionFalse, reasonPodUsingPVC
	}
	for _, have := range claim.Status.Conditions {
		if have.Type == conditionUnused && have.Status == want.Status && have.Reason == want.Reason {
			return nil
		}
	}
	cl := claim.DeepCopy()
	want.LastTransitionTime = metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	cl.Status.Conditions = slices.DeleteFunc(cl.Status.Conditions, func(x corev1.PersistentVolumeClaimCondition) bool {
		return x.Type == conditionUnused
	})
	cl.Status.Conditions = append(cl.Status.Conditions, want)
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer claim comes back through the queue
	}
	return err
}

// usedByPod: a pod that has not finished names the claim.
func (c *Controller) usedByPod(claim *corev1.PersistentVolumeClaim) (bool, error) {
	pods, err := c.pods.Pods(claim.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
				return true, nil
			}
		}
	}
	return false, nil
}
