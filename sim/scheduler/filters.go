package scheduler

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// The reasons a node does not fit, worded as the real scheduler's plugins
// word them in FailedScheduling events.
const (
	reasonUnschedulable       = "node(s) were unschedulable"
	reasonNodeAffinity        = "node(s) didn't match Pod's node affinity/selector"
	reasonVolumeNodeAffinity  = "node(s) didn't match PersistentVolume's node affinity"
	reasonNoPersistentVolumes = "node(s) didn't find available persistent volumes to bind"
	reasonMaxVolumeCount      = "node(s) exceed max volume count"
	reasonNotSelectedNode     = "node(s) didn't match the node selected for the pod's volumes"
	reasonNotEnoughStorage    = "node(s) did not have enough free storage"
	annSelectedNode           = "volume.kubernetes.io/selected-node"
)

// podVolumes is what scheduling needs to know of a pod's claims.
type podVolumes struct {
	bound     []*corev1.PersistentVolume      // volumes of bound claims
	delayed   []*corev1.PersistentVolumeClaim // unbound WaitForFirstConsumer claims
	classes   map[string]*storagev1.StorageClass
	available []*corev1.PersistentVolume // volumes a delayed claim could bind to
	selected  string                     // a node already chosen for the delayed claims
	// capacity says whether a volume of the claim's class and size can be
	// made for the node, when its driver publishes storage capacity.
	capacity func(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) bool
}

// fits says why node cannot run pod, or "" when it can.
func fits(pod *corev1.Pod, node *corev1.Node, vols podVolumes, limit func(*corev1.Node) (bool, error)) string {
	if node.Spec.Unschedulable && !tolerates(pod, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return reasonUnschedulable
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return reasonNodeAffinity
	}
	if vols.selected != "" && vols.selected != node.Name {
		return reasonNotSelectedNode
	}
	for _, pv := range vols.bound {
		if !volumeFits(pv, node) {
			return reasonVolumeNodeAffinity
		}
	}
	for _, claim := range vols.delayed {
		if claim.Annotations[annSelectedNode] != "" {
			continue
		}
		if staticMatch(claim, vols.available, node) != nil {
			continue
		}
		class := vols.classes[className(claim)]
		if class == nil || class.Provisioner == "" || class.Provisioner == "kubernetes.io/no-provisioner" || !allowedOn(class, node) {
			return reasonNoPersistentVolumes
		}
		if vols.capacity != nil && !vols.capacity(claim, class, node) {
			return reasonNotEnoughStorage
		}
	}
	if ok, err := limit(node); err == nil && !ok {
		return reasonMaxVolumeCount
	}
	return ""
}

func tolerates(pod *corev1.Pod, taint corev1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, &taint, false)
}

// volumeFits: the volume's node affinity admits the node.
func volumeFits(pv *corev1.PersistentVolume, node *corev1.Node) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
	return err == nil && sel.Match(node)
}

// allowedOn: the class's allowedTopologies (if any) admit the node.
func allowedOn(class *storagev1.StorageClass, node *corev1.Node) bool {
	if len(class.AllowedTopologies) == 0 {
		return true
	}
	for _, term := range class.AllowedTopologies {
		ok := true
		for _, expr := range term.MatchLabelExpressions {
			v, has := node.Labels[expr.Key]
			if !has || !contains(expr.Values, v) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// staticMatch is the smallest Available volume of the claim's class,
// modes and size that the node can use.
func staticMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, node *corev1.Node) *corev1.PersistentVolume {
	var best *corev1.PersistentVolume
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	for _, pv := range volumes {
		if pv.Spec.ClaimRef != nil || pv.DeletionTimestamp != nil || pv.Spec.StorageClassName != className(claim) ||
			(pv.Status.Phase != corev1.VolumeAvailable && pv.Status.Phase != "") || !volumeFits(pv, node) {
			continue
		}
		ok := true
		for _, m := range claim.Spec.AccessModes {
			ok = ok && contains(accessModes(pv), string(m))
		}
		capacity := pv.Spec.Capacity[corev1.ResourceStorage]
		if !ok || capacity.Cmp(request) < 0 {
			continue
		}
		if best == nil {
			best = pv
			continue
		}
		bc := best.Spec.Capacity[corev1.ResourceStorage]
		if c := capacity.Cmp(bc); c < 0 || (c == 0 && pv.Name < best.Name) {
			best = pv
		}
	}
	return best
}

func accessModes(pv *corev1.PersistentVolume) []string {
	out := make([]string, 0, len(pv.Spec.AccessModes))
	for _, m := range pv.Spec.AccessModes {
		out = append(out, string(m))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func className(claim *corev1.PersistentVolumeClaim) string {
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return ""
}

// failureMessage words a FailedScheduling event as the real scheduler
// does: the count of nodes, then "N reason" for each reason, sorted as
// strings, then the preemption postscript.
func failureMessage(total int, reasons map[string]int) string {
	parts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.",
		total, strings.Join(parts, ", "), total, total)
}
