package kubelet

// What wakes a pod that waits for its volumes. The real kubelet's volume
// manager looks again every 100 ms (its desired-state populator and
// reconciler) and its pod worker every 300 ms; the simulated one syncs a
// waiting pod when something it waits for changes, on the same virtual
// instant, and only that pod: a claim it uses, the volume bound to such a
// claim, an attachment to this node of such a volume, this node's status
// (volumesAttached, volumesInUse), or a CSIDriver (attachRequired). A
// running pod with a volume its volume manager wants to expand is woken by
// a change of that volume's claim (the resizer marking it), as the
// reconciler, looking every 100 ms, would see it (expand.go). A
// change elsewhere in the cluster — another node's pods, volumes and
// heartbeats — wakes nothing here, so the cost of a write does not grow
// with the number of nodes.

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/volumeutil"
)

// addWakeHandlers registers what wakes waiting pods: on the informers of
// nodes and CSIDrivers its own handlers; for claims, volumes and
// attachments, which all kubelets share, it joins the Fanout (fanout.go),
// which calls wakeClaim, enqueuePendingOfVolume and wakeAttachment of the
// kubelets a write concerns. pods is the kubelet's own pod informer.
func (k *Kubelet) addWakeHandlers(fan *Fanout, pods, claims, volumes, nodes, drivers, attachments cache.SharedIndexInformer, indexed bool) {
	own := fan == nil || !fan.shares(claims, volumes, attachments)
	on := func(inf cache.SharedIndexInformer, wake func(obj any)) {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    wake,
			UpdateFunc: func(_, obj any) { wake(obj) },
		})
	}
	if own {
		fan = NewFanout()
	}
	fan.join(k, pods, own || !indexed, claims, volumes, attachments)
	// What is cached already, in the order of the handlers it replaces.
	replay(claims, func(obj any) {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			k.wakeClaim(c)
		}
	})
	replay(volumes, func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok {
			k.enqueuePendingOfVolume(pv)
		}
	})
	on(nodes, func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && n.Name == k.cfg.NodeName {
			k.enqueuePending()
		}
	})
	on(drivers, func(any) { k.enqueuePending() })
	replay(attachments, func(obj any) {
		if va, ok := obj.(*storagev1.VolumeAttachment); ok {
			k.wakeAttachment(va)
		}
	})
}

// wakeClaim queues the waiting pods that use the claim.
func (k *Kubelet) wakeClaim(c *corev1.PersistentVolumeClaim) {
	k.enqueuePendingUsing(c.Namespace + "/" + c.Name)
}

// wakeAttachment queues the waiting pods whose volume the attachment
// attaches to this node.
func (k *Kubelet) wakeAttachment(va *storagev1.VolumeAttachment) {
	if va.Spec.NodeName != k.cfg.NodeName {
		return
	}
	if va.Spec.Source.PersistentVolumeName == nil {
		k.enqueuePending() // a pod's inline volume: no claim says whose
		return
	}
	if pv, err := k.volumes.Get(*va.Spec.Source.PersistentVolumeName); err == nil {
		k.enqueuePendingOfVolume(pv)
	}
}

// enqueuePendingOfVolume queues the waiting pods whose claim the volume is
// bound to.
func (k *Kubelet) enqueuePendingOfVolume(pv *corev1.PersistentVolume) {
	if ref := pv.Spec.ClaimRef; ref != nil {
		k.enqueuePendingUsing(ref.Namespace + "/" + ref.Name)
	}
}

// enqueuePendingUsing queues this node's waiting pods that use the claim
// "namespace/name".
func (k *Kubelet) enqueuePendingUsing(claim string) {
	pods, err := volumeutil.ByIndex[*corev1.Pod](k.podIndex, volumeutil.PodsByClaim, claim)
	if err != nil {
		// No index (an informer that refused it): wake them all.
		k.enqueuePending()
		return
	}
	for _, p := range pods {
		if k.awaitsExpansion(p) {
			k.queue.Add(p.Namespace + "/" + p.Name)
			continue
		}
		k.enqueueIfWaiting(p)
	}
}

// enqueuePending queues this node's pods that are not yet running, or are
// being deleted.
func (k *Kubelet) enqueuePending() {
	pods, _ := k.pods.List(labels.Everything())
	for _, p := range pods {
		k.enqueueIfWaiting(p)
	}
}

func (k *Kubelet) enqueueIfWaiting(p *corev1.Pod) {
	if p.Status.Phase == corev1.PodPending || p.DeletionTimestamp != nil {
		k.queue.Add(p.Namespace + "/" + p.Name)
	}
}
