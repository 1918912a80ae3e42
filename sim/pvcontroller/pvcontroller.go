// Package pvcontroller is the simulated PersistentVolume controller of
// kube-controller-manager (its "persistent-volume-binder"): it binds claims
// to volumes, hands dynamic provisioning to the external provisioner
// through the storage-provisioner annotation, tracks volume and claim
// phases (Available, Bound, Released, Failed; Pending, Bound, Lost) and
// carries out reclaim policies. It also runs the pvc-protection and
// pv-protection controllers (finalizers and the claim's Unused condition).
//
// It follows the real controller's decisions and words: a claim is
// "bound" once it has the pv.kubernetes.io/bind-completed annotation; the
// volume is written before the claim; a claim and a volume are synced
// when they change and every SyncPeriod (15 s), and nothing else — a
// volume that appears after its claim binds at the next resync.
package pvcontroller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

// Controller is the PV controller plus the two protection controllers.
type Controller struct {
	clock   clock.PassiveClock
	client  kubernetes.Interface
	events  record.EventRecorder
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	pods    corelisters.PodLister
	// volumeIndex and podIndex are the informers' caches with
	// volumeutil.VolumesByClaim and volumeutil.PodsByClaim.
	volumeIndex, podIndex cache.Indexer
	// claimVersions and volumeVersions are the newest versions the binder
	// knows of each claim and volume (versions.go).
	claimVersions, volumeVersions newest
	claimQ                        controller.Queue
	volumeQ                       controller.Queue
	// The protection controllers' queues.
	claimProtQ  controller.Queue
	volumeProtQ controller.Queue
	stopRecs    func()
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	events, stop := rt.NewEventRecorder(client, "persistentvolume-controller", "")
	c := &Controller{
		clock:       rt.Clock,
		client:      client,
		events:      events,
		stopRecs:    stop,
		claimQ:      rt.NewQueue("claims"),
		volumeQ:     rt.NewQueue("volumes"),
		claimProtQ:  rt.NewQueue("pvc-protection"),
		volumeProtQ: rt.NewQueue("pv-protection"),
	}
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	podInf := factory.Core().V1().Pods()
	scInf := factory.Storage().V1().StorageClasses()
	c.claims, c.volumes, c.classes, c.pods = pvcInf.Lister(), pvInf.Lister(), scInf.Lister(), podInf.Lister()
	// The real controllers index too: the binder its volumes, the PVC
	// protection controller pods by claim (sim/volumeutil).
	_ = volumeutil.AddIndexes(pvInf.Informer(), volumeutil.VolumesByClaim)
	_ = volumeutil.AddIndexes(podInf.Informer(), volumeutil.PodsByClaim)
	c.volumeIndex, c.podIndex = pvInf.Informer().GetIndexer(), podInf.Informer().GetIndexer()
	_, _ = pvcInf.Informer().AddEventHandler(controller.EnqueueHandler(c.claimQ))
	_, _ = pvInf.Informer().AddEventHandler(controller.EnqueueHandler(c.volumeQ))
	_, _ = pvcInf.Informer().AddEventHandler(controller.EnqueueHandler(c.claimProtQ))
	_, _ = pvInf.Informer().AddEventHandler(controller.EnqueueHandler(c.volumeProtQ))
	// A claim that goes releases its volume; a volume that goes loses its
	// claim. Both are synced at once rather than at the next resync.
	_, _ = pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if claim, ok := controller.Unwrap(obj).(*corev1.PersistentVolumeClaim); ok && claim.Spec.VolumeName != "" {
			c.volumeQ.Add(claim.Spec.VolumeName)
		}
	}})
	_, _ = pvInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if pv, ok := controller.Unwrap(obj).(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
			c.claimQ.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
		}
	}})
	// A claim's protection and Unused condition depend on the pods that
	// use it. (The binder itself does not watch pods.)
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueuePodClaims,
		UpdateFunc: func(_, obj any) { c.enqueuePodClaims(obj) },
		DeleteFunc: c.enqueuePodClaims,
	})
	return c
}

func (c *Controller) enqueuePodClaims(obj any) {
	pod, ok := controller.Unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			c.claimProtQ.Add(pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
		}
	}
}

// Workers are the controller's queues and sync functions.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{
		{Name: "pv-controller-claims", Queue: c.claimQ, Sync: recoverLater(c.syncClaim)},
		{Name: "pv-controller-volumes", Queue: c.volumeQ, Sync: recoverLater(c.syncVolume)},
		{Name: "pvc-protection", Queue: c.claimProtQ, Sync: c.syncClaimProtection},
		{Name: "pv-protection", Queue: c.volumeProtQ, Sync: c.syncVolumeProtection},
	}
}

// recoverLater treats a failed claim or volume sync as the real
// controller's workers do (pkg/controller/volume/persistentvolume/
// pv_controller_base.go updateClaim, updateVolume): the error is logged
// and the key is not queued again — "version conflict error happens quite
// often and the controller recovers from it easily" — so the next event of
// the object or the next resync (SyncPeriod) syncs it again.
func recoverLater(sync controller.Sync) controller.Sync {
	return func(ctx context.Context, key string) error {
		_ = sync(ctx, key)
		return nil
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

// Start starts the controller in a simulated cluster (controller.Start):
// its workers, and its resync every SyncPeriod.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	c := New(d.Client, d.Informers, d.Runtime)
	return controller.Component{Workers: c.Workers(), Periodic: []controller.Periodic{{Every: SyncPeriod, Run: c.Resync}}}, nil
}
