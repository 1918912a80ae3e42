package kubelet

// The kubelet's periodic work on running pods: their periodic sync
// (--sync-frequency, pkg/kubelet/kubelet.go syncLoop) and volume stats
// (--volume-stats-agg-period, pkg/kubelet/server/stats
// volume_stat_calculator.go).

import (
	"context"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SyncFrequency is how often the kubelet syncs each running pod
// (--sync-frequency, default 1 m; the real pod workers add up to half of it
// as jitter, left out here to keep runs reproducible without a seed). Each
// sync asks the volume manager to mount the pod's volumes again where the
// plugin requires it: for CSI, drivers with requiresRepublish get
// NodePublishVolume again.
const SyncFrequency = time.Minute

// VolumeStatsPeriod is how often the kubelet gathers volume usage
// (--volume-stats-agg-period, default 1 m): NodeGetVolumeStats for every
// published volume of a driver with GET_VOLUME_STATS.
const VolumeStatsPeriod = time.Minute

// Resync is each running pod's periodic sync: the pods that have volumes
// of drivers with requiresRepublish are marked for a sync that publishes
// them again (as is the sync their containers' start causes,
// pod_workers.go); every pod's volumes get their desired size from their PVs
// again (the volume manager reads claims and volumes anew when it
// processes the pod), and the pods with a volume to expand are queued.
// Other pods are left alone: their periodic sync does nothing a
// simulation can see.
func (k *Kubelet) Resync(context.Context) {
	if k.Stopped() {
		return
	}
	pods, _ := k.pods.List(labels.Everything())
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		key := p.Namespace + "/" + p.Name
		republish := k.hasRepublishVolume(p)
		if !k.refreshSizes(p) && !republish {
			continue
		}
		if republish {
			k.podWorkers.markSyncDue(key, k.clock.Now())
		}
		k.queue.Add(key)
	}
}

// hasRepublishVolume reports whether a pod has a published volume whose
// driver requires republishing.
func (k *Kubelet) hasRepublishVolume(pod *corev1.Pod) bool {
	for _, m := range k.actual.podVolumes(pod.UID) {
		if k.requiresRepublish(m.driverName()) {
			return true
		}
	}
	return false
}

// CollectVolumeStats asks the node plugin for the usage of every volume
// published here, as the kubelet's volume stats calculators do, when the
// plugin has GET_VOLUME_STATS. The answers of the claims' volumes are the
// kubelet_volume_stats metrics (volumestats.go).
func (k *Kubelet) CollectVolumeStats(ctx context.Context) {
	if k.Stopped() {
		return
	}
	fresh := map[claimRef]volumeUsage{}
	for _, driver := range k.driverNames() {
		k.collectVolumeStats(ctx, driver, fresh)
	}
	k.volumeStats.replace(fresh)
}

// collectVolumeStats is CollectVolumeStats for the volumes of one driver,
// from its node plugin.
func (k *Kubelet) collectVolumeStats(ctx context.Context, driver string, fresh map[claimRef]volumeUsage) {
	type target struct{ handle, path, pvName string }
	var targets []target
	for _, m := range k.actual.allMounted() {
		if !m.uncertain && m.driverName() == driver {
			targets = append(targets, target{m.handle, m.target, m.pvName})
		}
	}
	if len(targets) == 0 {
		return
	}
	slices.SortFunc(targets, func(a, b target) int {
		if a.path < b.path {
			return -1
		}
		if a.path > b.path {
			return 1
		}
		return 0
	})
	caps, err := k.nodeCapabilities(ctx, driver)
	if err != nil || !caps[csi.NodeServiceCapability_RPC_GET_VOLUME_STATS] {
		return
	}
	for _, t := range targets {
		callCtx, cancel := k.csiCallContext(ctx)
		resp, err := k.nodeClient(driver).NodeGetVolumeStats(callCtx, &csi.NodeGetVolumeStatsRequest{VolumeId: t.handle, VolumePath: t.path})
		cancel()
		if err == nil {
			k.noteVolumeStats(fresh, t.pvName, resp)
		}
	}
}

// driverOf takes the driver out of a unique name "kubernetes.io/csi/<driver>^<handle>".
func driverOf(u corev1.UniqueVolumeName) string {
	s := string(u)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '^' {
			s = s[:i]
			break
		}
	}
	const prefix = csiPluginName + "/"
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}
