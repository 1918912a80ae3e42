package kubelet

// A kubelet restart and the volume manager's reconstruction of its actual
// state from disk — models kubernetes
// pkg/kubelet/volumemanager/reconciler/reconstruct.go and
// reconstruct_common.go (volumesFailedReconstruction, the clean-up of
// orphaned pods' volumes).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/attachdetach"
)

// orphansKey is the queue key of the clean-up of volumes a restarted
// kubelet found for pods that no longer exist. No pod key looks like it.
const orphansKey = "#orphaned-pod-volumes"

// Restart is a kubelet restart: everything the process knew (which volumes
// it staged and published, which pods it saw) is dropped, and the new
// process rebuilds it as the real volume manager's reconstruction does,
// from what it finds under its directory — each pods/<UID>/volumes/
// kubernetes.io~csi/<PV> whose mount is there, each block device link in
// pods/<UID>/volumeDevices/kubernetes.io~csi, with vol_data.json to say
// which volume it is. What it finds it marks uncertain: a pod that still
// exists gets its volumes staged and published again (drivers must take
// that, the calls are idempotent), and volumes of pods gone meanwhile are
// unpublished and unstaged once the pods are listed. The plugin registers
// again (NodeGetInfo). Restart must not run concurrently with the kubelet's
// workers: the simulation calls it from its loop.
func (k *Kubelet) Restart(ctx context.Context) error {
	// The old process ends: its CSI calls in flight are cut off
	// (process.go), and what it was doing makes no call any more.
	k.runs.Add(1)
	k.desired.reset()
	k.actual.reset()
	k.backoff.clear()
	k.unmountBackoff.clear()
	k.tokens.clear()
	k.expandBackoff.clear()
	k.volumeStats.replace(nil) // until the new process gathers them
	k.pending.clear()
	// A new process has new pod workers and an empty status cache; the
	// sandboxes outlive it, and their addresses are in the pods' status.
	k.podWorkers.reset()
	k.statuses.reset()
	k.sandboxIPs.reset()
	// A new process posts new Events; it does not count on the old ones.
	k.stopRecs()
	k.events, k.stopRecs = k.newEvents()
	k.startEvents(false)

	// Each node plugin registers again, and says whether it stages.
	stages := map[string]bool{}
	for _, driver := range k.driverNames() {
		callCtx, cancel := k.csiCallContext(ctx)
		_, err := k.nodeClient(driver).NodeGetInfo(callCtx, &csi.NodeGetInfoRequest{})
		cancel()
		if err != nil {
			return fmt.Errorf("node %s: registering the CSI plugin %s again: NodeGetInfo: %w", k.cfg.NodeName, driver, err)
		}
		caps, err := k.nodeCapabilities(ctx, driver)
		if err != nil {
			return fmt.Errorf("node %s: %w", k.cfg.NodeName, err)
		}
		stages[driver] = caps[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME]
	}
	found, err := k.reconstruct(stages)
	if err != nil {
		return fmt.Errorf("node %s: reconstructing volumes: %w", k.cfg.NodeName, err)
	}
	k.actual.restore(found.mounted, found.staged)
	k.mu.Lock()
	k.failedReconstruction = found.failed
	k.mu.Unlock()
	// What the previous process reported stays reported: the new one
	// starts from the Node's status, so nothing is written until it changes.
	if node, err := k.nodes.Get(k.cfg.NodeName); err == nil {
		inUse := slices.Clone(node.Status.VolumesInUse)
		slices.Sort(inUse)
		k.desired.markReportedInUse(inUse)
	}

	// The new process lists its pods: each is synced, then what no pod
	// claims is cleaned up.
	pods, _ := k.pods.List(labels.Everything())
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, p.Namespace+"/"+p.Name)
	}
	sort.Strings(keys)
	for _, key := range keys {
		k.queue.Add(key)
	}
	k.queue.Add(orphansKey)
	// The new process's plugin registration starts its CSINode updater.
	k.syncCSINodeUpdater(k.cfg.DriverName)
	return nil
}

// reconstructed is the actual state found on disk.
type reconstructed struct {
	mounted map[types.UID]map[string]*mountedVolume
	staged  map[corev1.UniqueVolumeName]*stagedVolume
	// failed are volume directories whose mount is gone: not in the
	// actual state, but cleaned up if their pod is gone too.
	failed []*failedVolume
}

// failedVolume is a pod volume directory that could not be reconstructed.
type failedVolume struct {
	uid types.UID
	*mountedVolume
}

// reconstruct scans the pods directory; stages says, by driver, whether
// its node plugin stages volumes. A volume directory that has no
// readable vol_data.json, or whose device link is gone, is not
// reconstructed; one whose mount is gone is not either, but is remembered
// for clean-up (the real kubelet's volumesFailedReconstruction).
func (k *Kubelet) reconstruct(stages map[string]bool) (reconstructed, error) {
	out := reconstructed{mounted: map[types.UID]map[string]*mountedVolume{}, staged: map[corev1.UniqueVolumeName]*stagedVolume{}}
	podDirs, err := os.ReadDir(filepath.Join(k.cfg.Dir, "pods"))
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	add := func(uid types.UID, m *mountedVolume, staging string) {
		if out.mounted[uid] == nil {
			out.mounted[uid] = map[string]*mountedVolume{}
		}
		out.mounted[uid][m.pvName] = m
		if stages[driverOf(m.unique)] && staging != "" {
			out.staged[m.unique] = &stagedVolume{path: staging, handle: m.handle, pvName: m.pvName, block: m.block, uncertain: true}
		}
	}
	for _, pd := range podDirs {
		uid := types.UID(pd.Name())
		vols, _ := os.ReadDir(podVolumesDir(k.cfg.Dir, uid))
		for _, vd := range vols {
			dir := filepath.Join(podVolumesDir(k.cfg.Dir, uid), vd.Name())
			data, err := loadVolumeData(dir)
			if err != nil || data[volDataHandle] == "" || data[volDataDriver] == "" {
				continue
			}
			target := filepath.Join(dir, "mount")
			m := &mountedVolume{unique: attachdetach.UniqueVolumeName(data[volDataDriver], data[volDataHandle]), pvName: vd.Name(),
				handle: data[volDataHandle], target: target, uncertain: true}
			// An inline volume (inline.go) was never staged: the
			// plugin does not device-mount the Ephemeral mode.
			inline := data[volDataLifecycle] == string(storagev1.VolumeLifecycleEphemeral)
			if inline {
				m.unique, m.driver = inlineUniqueName(uid, vd.Name()), data[volDataDriver]
			}
			if !k.cfg.SkipMountCheck {
				if mounted, err := mountinfo.Mounted(target); err != nil || !mounted {
					out.failed = append(out.failed, &failedVolume{uid: uid, mountedVolume: m})
					continue
				}
			}
			if inline {
				add(uid, m, "")
				continue
			}
			add(uid, m, StagingPath(k.cfg.Dir, data[volDataDriver], data[volDataHandle]))
		}
		devs, _ := os.ReadDir(podDeviceDir(k.cfg.Dir, uid))
		for _, dev := range devs {
			link := filepath.Join(podDeviceDir(k.cfg.Dir, uid), dev.Name())
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				continue
			}
			data, err := loadVolumeData(blockDataDir(k.cfg.Dir, dev.Name()))
			if err != nil || data[volDataHandle] == "" || data[volDataDriver] == "" {
				continue
			}
			add(uid, &mountedVolume{unique: attachdetach.UniqueVolumeName(data[volDataDriver], data[volDataHandle]), pvName: dev.Name(),
				handle: data[volDataHandle], target: BlockPublishPath(k.cfg.Dir, dev.Name(), uid), block: true, uncertain: true},
				BlockStagingPath(k.cfg.Dir, dev.Name()))
		}
	}
	return out, nil
}

// cleanUpOrphans unpublishes, unstages and forgets the volumes of pods the
// kubelet has no pod for: after a restart, pods deleted while it was down.
func (k *Kubelet) cleanUpOrphans(ctx context.Context) error {
	pods, err := k.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	live, wanted := map[types.UID]bool{}, map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
		if k.populatorWants(p) {
			wanted[p.UID] = true
		}
	}
	for _, uid := range k.podWorkers.knownUIDs() {
		live[uid] = true
	}
	var orphans []types.UID
	for _, uid := range k.actual.pods() {
		if !live[uid] {
			orphans = append(orphans, uid)
		}
	}
	k.mu.Lock()
	failed := k.failedReconstruction
	k.failedReconstruction = nil
	k.mu.Unlock()
	for _, uid := range orphans {
		if err := k.tearDown(ctx, uid, ""); err != nil {
			return err
		}
	}
	// What could not be reconstructed is torn down unless the desired
	// state wants it (NodeUnpublishVolume on the target, which the driver
	// must take even if nothing is mounted there), once, as the real
	// kubelet's cleanOrphanVolumes does (reconstruct.go): it asks the
	// desired state, fully populated by then, not whether the pod exists.
	// A pod being deleted is not in it: its pod worker finds none of its
	// volumes in the actual state and lets it go, so without this nothing
	// would unpublish a volume whose NodeUnpublishVolume the restart (or a
	// crash of the driver before it answered) left unconfirmed.
	for _, f := range failed {
		if wanted[f.uid] {
			continue
		}
		if err := k.unpublish(ctx, f.uid, f.mountedVolume); err != nil {
			return err
		}
		if !k.actual.hasPod(f.uid) {
			if err := removeUnmountedDir(filepath.Join(k.cfg.Dir, "pods", string(f.uid))); err != nil {
				return err
			}
		}
	}
	k.queueUnusedDevices()
	return nil
}

// populatorWants says whether the desired state of world, once populated,
// has the pod's volumes: the populator adds those of every pod of the node
// but the pods whose containers are to be terminating — deleted, in a
// terminal phase, or whose termination the pod workers have begun
// (kubernetes pkg/kubelet/volumemanager/populator/
// desired_state_of_world_populator.go, findAndAddNewPods with
// ShouldPodContainersBeTerminating). The real populator's first pass
// after a restart, before its sources are ready, also adds a deleted pod
// the pod workers have not yet seen terminate; its reconciler then
// publishes the volume again and unpublishes it once the pod is gone: one
// NodeUnpublishVolume all the same, a moment later.
func (k *Kubelet) populatorWants(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return k.podWorkers.terminationOf(pod.UID) == 0
}
