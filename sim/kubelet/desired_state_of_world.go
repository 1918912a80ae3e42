package kubelet

// The volume manager's desired state of world: which volumes the pods on
// the node are to have set up, the size their pods want each at, and which
// of them the node's status has reported in use — models kubernetes
// pkg/kubelet/volumemanager/cache/desired_state_of_world.go. The populator
// (populator.go) fills it from the pods; the reconciler (reconciler.go)
// drives the actual state (actual_state_of_world.go) toward it.

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// desiredState is what the kubelet wants set up on the node.
type desiredState struct {
	mu sync.Mutex
	// podVolumes: the claim volumes each pod is to have mounted (the real
	// one's volumesToMount, keyed here by pod). A pod's inline volumes are
	// not listed: the simulated populator sets them up from the pod's spec
	// (inline.go), and no node-wide decision depends on them.
	podVolumes map[types.UID][]corev1.UniqueVolumeName
	// sizes: the size pods want each volume at (the desired state's
	// persistentVolumeSize): its PV's capacity when a pod using it last
	// synced; pods with a read-only claim do not update it.
	sizes map[corev1.UniqueVolumeName]resource.Quantity
	// reportedInUse: the volumesInUse the node's status last reported,
	// sorted; an attachable volume is mounted only once it is among them.
	reportedInUse []corev1.UniqueVolumeName
	// seLinux: the SELinux label each volume some pod is to have is to be
	// mounted with ("" for none; selinux.go), the label of the pod that
	// took it in first: the real one's effectiveSELinuxMountFileLabel,
	// which for a persistent volume in v1.37 is its originalSELinuxLabel.
	seLinux map[corev1.UniqueVolumeName]string
}

// reset empties the state, as a new kubelet process starts.
func (d *desiredState) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.podVolumes = map[types.UID][]corev1.UniqueVolumeName{}
	d.sizes = map[corev1.UniqueVolumeName]resource.Quantity{}
	d.reportedInUse = nil
	d.seLinux = map[corev1.UniqueVolumeName]string{}
}

// setPodVolumes says which volumes the pod is to have (AddPodToVolume for
// each), replacing what it was to have; seLinux gives the label each is
// to be mounted with, which a volume takes only if no pod had it yet.
func (d *desiredState) setPodVolumes(uid types.UID, volumes []corev1.UniqueVolumeName, seLinux map[corev1.UniqueVolumeName]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range volumes {
		if !d.hasVolumeLocked(u) {
			d.seLinux[u] = seLinux[u]
		}
	}
	d.podVolumes[uid] = volumes
	d.forgetGoneLocked()
}

// deletePod says the pod is to have no volumes (DeletePodFromVolume for
// each of its own).
func (d *desiredState) deletePod(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.podVolumes, uid)
	d.forgetGoneLocked()
}

// hasVolumeLocked says whether some pod is to have the volume.
func (d *desiredState) hasVolumeLocked(u corev1.UniqueVolumeName) bool {
	for _, vols := range d.podVolumes {
		if slices.Contains(vols, u) {
			return true
		}
	}
	return false
}

// forgetGoneLocked drops the label and the reported-in-use mark of each
// volume no pod is to have any more: the volume is gone from the desired
// state, and a pod that wants it later adds it anew, unreported
// (desired_state_of_world.go, AddPodToVolume: reportedInUse false), so it
// is not mounted before a node status has reported it in use again — a
// mark kept from the last pod would let the attach/detach controller,
// reading a status that left the volume out, detach it under the new pod.
func (d *desiredState) forgetGoneLocked() {
	for u := range d.seLinux {
		if !d.hasVolumeLocked(u) {
			delete(d.seLinux, u)
		}
	}
	d.reportedInUse = slices.DeleteFunc(d.reportedInUse, func(u corev1.UniqueVolumeName) bool { return !d.hasVolumeLocked(u) })
}

// seLinuxLabel is the label the volume is to be mounted with, "" if none
// or if no pod is to have it.
func (d *desiredState) seLinuxLabel(u corev1.UniqueVolumeName) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seLinux[u]
}

// seLinuxConflict is AddPodToVolume's check for a pod that is not yet
// among the volume's pods: if other pods have the volume with another
// label, it returns that label and true.
func (d *desiredState) seLinuxConflict(uid types.UID, u corev1.UniqueVolumeName, label string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.hasVolumeLocked(u) || slices.Contains(d.podVolumes[uid], u) {
		return "", false
	}
	existing := d.seLinux[u]
	return existing, existing != label
}

// volumes are the volumes some pod is to have (VolumeExists for each).
func (d *desiredState) volumes() map[corev1.UniqueVolumeName]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[corev1.UniqueVolumeName]bool{}
	for _, vols := range d.podVolumes {
		for _, u := range vols {
			out[u] = true
		}
	}
	return out
}

// updateSize records the size pods want the volume at: pvSize, unless the
// volume has one already and readOnly (a read-only claim does not ask its
// volume to grow).
func (d *desiredState) updateSize(u corev1.UniqueVolumeName, pvSize resource.Quantity, readOnly bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, known := d.sizes[u]; !known || !readOnly {
		d.sizes[u] = pvSize.DeepCopy()
	}
}

// size is the size pods want the volume at; false if none is known.
func (d *desiredState) size(u corev1.UniqueVolumeName) (resource.Quantity, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.sizes[u]
	return s.DeepCopy(), ok
}

// forgetSize drops the size wanted of a volume gone from the node.
func (d *desiredState) forgetSize(u corev1.UniqueVolumeName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sizes, u)
}

// markReportedInUse records the volumesInUse the node's status has just
// reported (MarkVolumesReportedInUse); it reports whether they changed.
func (d *desiredState) markReportedInUse(inUse []corev1.UniqueVolumeName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	changed := !slices.Equal(d.reportedInUse, inUse)
	d.reportedInUse = slices.Clone(inUse)
	return changed
}

// isReportedInUse reports whether the node's status has reported the
// volume in use.
func (d *desiredState) isReportedInUse(u corev1.UniqueVolumeName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Contains(d.reportedInUse, u)
}
