package diff

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	testingclock "k8s.io/utils/clock/testing"
)

// simulation is what settling needs of the simulator: its virtual clock
// and running it.
type simulation interface {
	Clock() *testingclock.FakeClock
	// RunUntil runs the work that is ready until cond holds or nothing is
	// left to do at this instant.
	RunUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error
	// RunFor runs the simulation for d of virtual time.
	RunFor(ctx context.Context, d time.Duration) error
}

// settleVirtual runs sim until its virtual clock has reached until and its
// snapshot has not changed for quiet of virtual time, looking every
// pollSettle, as the real cluster is watched. It gives up (false) when
// there is no quiet by timeout after until, or the simulation fails.
//
// until is the time at which the real cluster's snapshot of the same step
// was taken, on the simulation's clock: settling by quiet alone would stop
// the simulation before a timer due later (a scheduler backoff of up to
// 10 s, a sidecar's retry), which the real cluster, running in real time
// through the step and its settling, has already seen fire.
func settleVirtual(ctx context.Context, sim simulation, snapshot func() (Snapshot, error), until time.Time, quiet, timeout time.Duration) bool {
	clk := sim.Clock()
	if now := clk.Now(); now.After(until) {
		until = now
	}
	deadline := until.Add(timeout)
	var last Snapshot
	var since time.Time
	for clk.Now().Before(deadline) {
		if err := sim.RunUntil(ctx, 0, func() (bool, error) { return true, nil }); err != nil {
			return false
		}
		s, err := snapshot()
		if err != nil {
			return false
		}
		if since.IsZero() || !s.Equal(last) {
			last, since = s, clk.Now()
		} else if clk.Since(since) >= quietFor(last, quiet) && !clk.Now().Before(until) {
			return true
		}
		if err := sim.RunFor(ctx, pollSettle); err != nil {
			return false
		}
	}
	return false
}

// statusSyncQuiet is the quiet a snapshot that awaits a kubelet's node
// status sync must show before it counts as settled: longer than the
// sync's period (nodeStatusUpdateFrequency, 10 s), so that the sync has
// come, whatever its phase. A kubelet mounts an attached volume only once
// a sync has reported it in volumesInUse, and a volume no pod uses any
// more is detached only once a sync has dropped it; without this, either
// cluster could be looked at in the seconds before its sync, the other
// after, and the two would differ in when, not in what.
const statusSyncQuiet = 11 * time.Second

// quietFor is the quiet the last snapshot must show.
func quietFor(last Snapshot, quiet time.Duration) time.Duration {
	if last.AwaitsStatusSync {
		return max(quiet, statusSyncQuiet)
	}
	return quiet
}

// awaitsStatusSync says whether a kubelet's next node status sync will
// change what objs show: a pod bound to a node and not yet running (it may
// be waiting for its volumes to be reported in use) or being deleted, or a node reporting
// in use a volume none of its pods uses (it will stop, and the volume be
// detached).
func awaitsStatusSync(objs Objects) bool {
	handles := map[string]string{} // "namespace/claim" -> CSI unique volume name
	for _, pvc := range objs.PVCs {
		for _, pv := range objs.PVs {
			if pv.Name == pvc.Spec.VolumeName && pv.Spec.CSI != nil {
				handles[pvc.Namespace+"/"+pvc.Name] = "kubernetes.io/csi/" + pv.Spec.CSI.Driver + "^" + pv.Spec.CSI.VolumeHandle
			}
		}
	}
	used := map[string]map[string]bool{} // node -> unique volume names its pods use
	for _, p := range objs.Pods {
		if p.Spec.NodeName == "" {
			continue
		}
		// Being set up, or being torn down (its containers stopped, then
		// its volumes): the kubelet is at work.
		if p.Status.Phase == corev1.PodPending || p.DeletionTimestamp != nil {
			return true
		}
		if used[p.Spec.NodeName] == nil {
			used[p.Spec.NodeName] = map[string]bool{}
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				used[p.Spec.NodeName][handles[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]] = true
			}
		}
	}
	for _, n := range objs.Nodes {
		for _, u := range n.Status.VolumesInUse {
			if !used[n.Name][string(u)] {
				return true
			}
		}
	}
	return false
}
