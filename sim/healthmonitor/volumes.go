package healthmonitor

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/csisim/csisim/sim/csiclient"
)

// The monitor's GetVolumeHealth path (external-health-monitor
// pkg/controller/pv_monitor_controller.go): a FIFO of volume names that a
// new bound volume of the driver joins, and that every volume of the
// driver not in it joins each VolumeListAddInterval; each of Workers
// workers takes the next name every MonitorInterval, checks it and puts it
// back. With fewer volumes than workers a volume is checked several times
// in a row, as issue #385 of the real one shows.

// volumeQueue is the FIFO, with the set of names ever enqueued: a name
// leaves the set only when its volume is gone, so a volume taken off for
// not being bound is not added again (the real one's issue #188).
type volumeQueue struct {
	// mu: on goroutines (controller.RunComponent) the informer's handler
	// adds while a worker takes.
	mu       sync.Mutex
	names    []string
	enqueued map[string]bool
}

func newVolumeQueue() *volumeQueue { return &volumeQueue{enqueued: map[string]bool{}} }

// add enqueues name; again only if requeue (a worker putting it back),
// else only if it was never enqueued.
func (q *volumeQueue) add(name string, requeue bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// A name waiting in the queue is not added twice, as client-go's
	// work queue does not add it twice.
	if !requeue && q.enqueued[name] || slices.Contains(q.names, name) {
		return
	}
	q.enqueued[name] = true
	q.names = append(q.names, name)
}

// forget drops a volume that is gone.
func (q *volumeQueue) forget(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.enqueued, name)
}

func (q *volumeQueue) next() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.names) == 0 {
		return "", false
	}
	name := q.names[0]
	q.names = q.names[1:]
	return name, true
}

// watchVolumes enqueues each volume of the driver added bound; changes to
// a volume do not concern the monitor, and a deleted one leaves the queue
// when a worker finds it gone.
func (m *monitor) watchVolumes(factory informers.SharedInformerFactory) {
	factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pv, ok := obj.(*corev1.PersistentVolume); ok && m.ours(pv) && pv.Status.Phase == corev1.VolumeBound {
				m.queue.add(pv.Name, true)
			}
		},
	})
}

// addAll is the periodic top-up: every volume of the driver not enqueued
// yet, bound or not (the worker judges), in name order.
func (m *monitor) addAll() {
	pvs, err := m.pvs.List(labels.Everything())
	if err != nil {
		return
	}
	slices.SortFunc(pvs, func(a, b *corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
	for _, pv := range pvs {
		if m.ours(pv) {
			m.queue.add(pv.Name, false)
		}
	}
}

// runWorkers is one MonitorInterval of the Workers workers, one after the
// other, each with the next queued volume.
func (m *monitor) runWorkers(ctx context.Context) {
	for range Workers {
		name, ok := m.queue.next()
		if !ok {
			return
		}
		if m.syncVolume(ctx, name) {
			m.queue.add(name, true)
		}
	}
}

// syncVolume checks one volume with ControllerGetVolumeHealth and says
// whether it goes back in the queue: not when it is gone, being deleted or
// not bound; a failed call records nothing and it goes back.
func (m *monitor) syncVolume(ctx context.Context, name string) bool {
	pv, err := m.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		m.queue.forget(name)
		return false
	}
	if err != nil {
		return true
	}
	if pv.DeletionTimestamp != nil || pv.Status.Phase != corev1.VolumeBound || !m.ours(pv) {
		return false
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, Timeout)
	defer cancel()
	resp, err := m.csi.ControllerGetVolumeHealth(callCtx, &csi.ControllerGetVolumeHealthRequest{VolumeId: pv.Spec.CSI.VolumeHandle})
	if err != nil {
		klog.Errorf("external-health-monitor: check controller volume health of %s: %v", name, err)
		return true
	}
	m.record(ctx, pv, resp.GetVolumeHealth().GetHealthStatuses())
	return true
}

// ours: a CSI volume of the monitor's driver.
func (m *monitor) ours(pv *corev1.PersistentVolume) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == m.driver
}

// boundVolumes are the driver's bound volumes with a claim, in name order.
func (m *monitor) boundVolumes() []*corev1.PersistentVolume {
	pvs, err := m.pvs.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*corev1.PersistentVolume
	for _, pv := range pvs {
		if m.ours(pv) && pv.Status.Phase == corev1.VolumeBound && pv.Spec.ClaimRef != nil {
			out = append(out, pv)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// record writes what the driver reports of pv on its claim's
// status.healthStatus, when it differs from what the claim has: nothing
// is written while a volume stays healthy. The conditions are the
// driver's, in its order, those of an unknown status left out (CSI v1.13:
// a CO ignores unknown VolumeHealthErrorType values).
func (m *monitor) record(ctx context.Context, pv *corev1.PersistentVolume, entries []*csi.VolumeHealth_VolumeHealthEntry) {
	ref := pv.Spec.ClaimRef
	claim, err := m.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil || claim.UID != ref.UID {
		return
	}
	want := conditions(entries)
	var have []corev1.VolumeHealthCondition
	if claim.Status.HealthStatus != nil {
		have = claim.Status.HealthStatus.HealthConditions
	}
	if slices.Equal(have, want) && (claim.Status.HealthStatus != nil || len(want) == 0) {
		return
	}
	claim = claim.DeepCopy()
	claim.Status.HealthStatus = &corev1.VolumeHealthStatus{HealthConditions: want, LastTransitionTime: metav1.NewTime(m.clock.Now())}
	if _, err := m.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		klog.Errorf("external-health-monitor: update health status of claim %s/%s: %v", claim.Namespace, claim.Name, err)
	}
}

// healthTypes maps CSI's VolumeHealthErrorType to the claim's status
// values.
var healthTypes = map[csi.VolumeHealthErrorType]corev1.VolumeHealthStatusType{
	csi.VolumeHealthErrorType_DEGRADED:     corev1.VolumeHealthDegraded,
	csi.VolumeHealthErrorType_INACCESSIBLE: corev1.VolumeHealthInaccessible,
	csi.VolumeHealthErrorType_DATA_LOSS:    corev1.VolumeHealthDataLoss,
}

func conditions(entries []*csi.VolumeHealth_VolumeHealthEntry) []corev1.VolumeHealthCondition {
	var out []corev1.VolumeHealthCondition
	for _, e := range entries {
		if t, ok := healthTypes[e.GetStatus()]; ok {
			out = append(out, corev1.VolumeHealthCondition{Status: t, Reason: e.GetReason(), Message: e.GetMessage()})
		}
	}
	return out
}
