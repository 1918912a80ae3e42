package kubelet

// The volume manager's actual state of world: what is set up on the node,
// as the results of the CSI calls said — models kubernetes
// pkg/kubelet/volumemanager/cache/actual_state_of_world.go. It holds no
// intent: which volumes pods want is the desired state's
// (desired_state_of_world.go), which pods are known, due a sync or being
// stopped is the pod workers' (pod_workers.go), and which operations are
// under way is the operation executor's (operations.go). It lives only in
// the kubelet process; a restarted kubelet rebuilds it from the kubelet
// directory (reconstruct.go).

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// actualState is what is staged and published on the node, and what the
// node knows of each volume's size.
type actualState struct {
	mu sync.Mutex
	// staged: the volumes staged on the node (the real one's device mount
	// state of an attached volume).
	staged map[corev1.UniqueVolumeName]*stagedVolume
	// mounted: pod UID → volume spec name (the PV's, or an inline
	// volume's) → its publish; a pod stays here, maybe with no volumes,
	// until its volumes are all torn down.
	mounted map[types.UID]map[string]*mountedVolume
	// sizes: what the node knows of each volume's size, for node
	// expansion (expand.go).
	sizes map[corev1.UniqueVolumeName]*actualSize
	// finalExpansionErrors: volumes whose node expansion failed with a
	// final error in this process (never forgotten, as the real one's
	// volumesWithFinalExpansionErrors).
	finalExpansionErrors map[corev1.UniqueVolumeName]bool
}

// stagedVolume is a volume staged on the node (NodeStageVolume done).
type stagedVolume struct {
	path   string // staging target path
	handle string
	pvName string
	block  bool
	// uncertain: maybe staged (a NodeStageVolume that did not end with a
	// final answer, or found on disk by a restarted kubelet): staged
	// again before use, as the real one's DeviceMountUncertain.
	uncertain bool
	// seLinux is the SELinux label it was staged with ("" for none): the
	// attached volume's seLinuxMountContext.
	seLinux string
}

// mountedVolume is a volume published for one pod.
type mountedVolume struct {
	unique corev1.UniqueVolumeName
	pvName string
	handle string
	target string // publish path: the mount dir, or the block publish file
	block  bool
	// uncertain: maybe published (VolumeMountUncertain), or reconstructed
	// after a restart; set up again if the pod still wants it.
	uncertain bool
	// driver is an inline volume's driver (inline.go), whose unique name
	// does not carry it; "" for a PV's.
	driver string
	// specName is the pod volume's name (OuterVolumeSpecName), by which
	// the containers' volumeMounts name it; "" when reconstructed after a
	// restart. Its subpath directory is named after pvName, the inner
	// volume spec name (subpath.go).
	specName string
}

// outerName is the pod volume's name; a restarted kubelet knows only the
// directory's, the PV's name, as the real one reconstructs it.
func (m *mountedVolume) outerName() string {
	if m.specName != "" {
		return m.specName
	}
	return m.pvName
}

// driverName is the volume's CSI driver.
func (m *mountedVolume) driverName() string {
	if m.driver != "" {
		return m.driver
	}
	return driverOf(m.unique)
}

// actualSize is what the node knows of a volume's size.
type actualSize struct {
	// size: the size the node has (the actual state's
	// persistentVolumeSize): the claim's status.capacity when the
	// populator first saw the volume, then each size the node expanded it
	// to.
	size resource.Quantity
	// inUseError: the driver answered FailedPrecondition (it cannot
	// expand the volume while in use): no more online expansion here.
	inUseError bool
	// devicePath: a block volume's device, the publish path of its last
	// map (what NodeExpandVolume gets as volume_path when online).
	devicePath string
}

// reset empties the state, as a new kubelet process starts.
func (a *actualState) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.staged = map[corev1.UniqueVolumeName]*stagedVolume{}
	a.mounted = map[types.UID]map[string]*mountedVolume{}
	a.sizes = map[corev1.UniqueVolumeName]*actualSize{}
	a.finalExpansionErrors = map[corev1.UniqueVolumeName]bool{}
}

// restore puts in what a restarted kubelet found on disk.
func (a *actualState) restore(mounted map[types.UID]map[string]*mountedVolume, staged map[corev1.UniqueVolumeName]*stagedVolume) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mounted, a.staged = mounted, staged
}

// mountedVolume is the volume name published for the pod, nil if none.
func (a *actualState) mountedVolume(uid types.UID, name string) *mountedVolume {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mounted[uid][name]
}

// markMounted records a publish for the pod (MarkVolumeAsMounted, or with
// m.uncertain MarkVolumeMountAsUncertain).
func (a *actualState) markMounted(uid types.UID, name string, m *mountedVolume) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mounted[uid] == nil {
		a.mounted[uid] = map[string]*mountedVolume{}
	}
	a.mounted[uid][name] = m
}

// markUnmounted forgets one publish of the pod (MarkVolumeAsUnmounted).
func (a *actualState) markUnmounted(uid types.UID, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.mounted[uid], name)
}

// deletePod forgets the pod, once its volumes are torn down.
func (a *actualState) deletePod(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.mounted, uid)
}

// hasPod reports whether the pod is in the state, with volumes or not yet
// all torn down.
func (a *actualState) hasPod(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.mounted[uid]
	return ok
}

// pods are the pods in the state, sorted.
func (a *actualState) pods() []types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.mounted))
}

// podVolumeNames are the names of the pod's published volumes, sorted.
func (a *actualState) podVolumeNames(uid types.UID) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.mounted[uid]))
}

// podVolumes are the pod's publishes by volume name, a copy.
func (a *actualState) podVolumes(uid types.UID) map[string]mountedVolume {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]mountedVolume, len(a.mounted[uid]))
	for name, m := range a.mounted[uid] {
		out[name] = *m
	}
	return out
}

// allMounted are every publish on the node, in no order.
func (a *actualState) allMounted() []mountedVolume {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []mountedVolume
	for _, vols := range a.mounted {
		for _, m := range vols {
			out = append(out, *m)
		}
	}
	return out
}

// markMountUncertain marks the pod's publish of volume name maybe
// published, after a TearDown that failed: the driver may have unmounted
// it or not (MarkVolumeMountAsUncertain).
func (a *actualState) markMountUncertain(uid types.UID, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.mounted[uid][name]; m != nil {
		m.uncertain = true
	}
}

// hasUncertain reports whether the pod has a volume maybe published: one a
// restarted kubelet found on disk, or whose publish did not end with a
// final answer, and that has not been set up since.
func (a *actualState) hasUncertain(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.mounted[uid] {
		if m.uncertain {
			return true
		}
	}
	return false
}

// mountedForOtherPod reports whether the volume name is published, or
// maybe published, for a pod other than uid.
func (a *actualState) mountedForOtherPod(uid types.UID, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for other, vols := range a.mounted {
		if other != uid && vols[name] != nil {
			return true
		}
	}
	return false
}

// stagedVolume is the volume's staging, nil if it is not staged.
func (a *actualState) stagedVolume(u corev1.UniqueVolumeName) *stagedVolume {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.staged[u]
}

// markStaged records a staging (MarkDeviceAsMounted, or with st.uncertain
// MarkDeviceAsUncertain).
func (a *actualState) markStaged(u corev1.UniqueVolumeName, st *stagedVolume) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.staged[u] = st
}

// markUnstaged forgets a staging (MarkDeviceAsUnmounted).
func (a *actualState) markUnstaged(u corev1.UniqueVolumeName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.staged, u)
}

// stagedVolumes are the staged volumes' names, sorted.
func (a *actualState) stagedVolumes() []corev1.UniqueVolumeName {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.staged))
}

// initializeClaimSize takes claimSize as the volume's size unless one is
// known (InitializeClaimSize).
func (a *actualState) initializeClaimSize(u corev1.UniqueVolumeName, claimSize resource.Quantity) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sizes[u]
	if s == nil {
		s = &actualSize{}
		a.sizes[u] = s
	}
	if s.size.IsZero() {
		s.size = claimSize.DeepCopy()
	}
}

// size is what the node knows of the volume's size, a copy; false if
// nothing.
func (a *actualState) size(u corev1.UniqueVolumeName) (actualSize, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sizes[u]
	if s == nil {
		return actualSize{}, false
	}
	return actualSize{size: s.size.DeepCopy(), inUseError: s.inUseError, devicePath: s.devicePath}, true
}

// sizedVolumes are the volumes whose size the node knows, sorted.
func (a *actualState) sizedVolumes() []corev1.UniqueVolumeName {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.sizes))
}

// updateSize applies f to the volume's known size, if it has one.
func (a *actualState) updateSize(u corev1.UniqueVolumeName, f func(*actualSize)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sizes[u]; s != nil {
		f(s)
	}
}

// forgetSize drops what the node knows of the volume's size: it is gone
// from the volume manager's states.
func (a *actualState) forgetSize(u corev1.UniqueVolumeName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sizes, u)
}

// markFinalExpansionError records that the volume's node expansion failed
// with a final error.
func (a *actualState) markFinalExpansionError(u corev1.UniqueVolumeName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finalExpansionErrors[u] = true
}

// hasFinalExpansionError reports whether markFinalExpansionError was
// called for the volume in this process.
func (a *actualState) hasFinalExpansionError(u corev1.UniqueVolumeName) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.finalExpansionErrors[u]
}
