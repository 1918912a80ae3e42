package kubelet

// The volume manager's word to the node status: which volumes the node
// uses (GetVolumesInUse) and which of them the node's status has reported
// (MarkVolumesAsReportedInUse) — models kubernetes
// pkg/kubelet/volumemanager/volume_manager.go. What its pod worker waits
// for (WaitForAttachAndMount) is in sync_pending_pod.go.

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volumesInUse are the volumes the node's status should report, as the
// real kubelet's GetVolumesInUse: every volume a pod here is to have (the
// desired state), and every volume the actual state has attached — still
// published for a pod (a terminated pod's, which the populator no longer
// wants, until it is unpublished) or still staged (until it is unstaged,
// maybe long after the pod has gone) — of those that are attached: it
// lists only volumes of attachable plugins, so a CSI volume whose driver
// needs no attach is never reported.
func (k *Kubelet) volumesInUse() []corev1.UniqueVolumeName {
	set := k.desired.volumes()
	for _, u := range k.actual.stagedVolumes() {
		set[u] = true
	}
	for _, m := range k.actual.allMounted() {
		if m.driver == "" { // an inline volume is never attached
			set[m.unique] = true
		}
	}
	inUse := make([]corev1.UniqueVolumeName, 0, len(set))
	for u := range set {
		if driver, _, ok := strings.Cut(strings.TrimPrefix(string(u), csiPluginName+"/"), "^"); ok && !k.attachRequired(driver) {
			continue
		}
		inUse = append(inUse, u)
	}
	slices.Sort(inUse)
	return inUse
}

// reportedInUse says whether every volume of vols that needs an attach is
// in the volumesInUse the node's status last reported.
func (k *Kubelet) reportedInUse(vols []volumeToMount) bool {
	for _, v := range vols {
		if !k.desired.isReportedInUse(v.unique) && k.attachRequired(v.pv.Spec.CSI.Driver) {
			return false
		}
	}
	return true
}
