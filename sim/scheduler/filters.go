package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// The reasons a node does not fit, worded as the real scheduler's plugins
// word them in FailedScheduling events.
const (
	reasonUnschedulable       = "node(s) were unschedulable"
	reasonUntoleratedTaint    = "node(s) had untolerated taint(s)"
	reasonNodeAffinity        = "node(s) didn't match Pod's node affinity/selector"
	reasonVolumeNodeAffinity  = "node(s) didn't match PersistentVolume's node affinity"
	reasonNoPersistentVolumes = "node(s) didn't find available persistent volumes to bind"
	reasonMaxVolumeCount      = "node(s) exceed max volume count"
	reasonNotEnoughStorage    = "node(s) did not have enough free storage"
	// From the VolumeRestrictions plugin of v1.37.2
	// (pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go;
	// older releases said "node has pod using PersistentVolumeClaim with
	// the same name and ReadWriteOncePod access mode").
	reasonReadWriteOncePodConflict = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

// podVolumes is what scheduling needs to know of a pod's claims.
type podVolumes struct {
	bound     []*corev1.PersistentVolume      // volumes of bound claims
	delayed   []*corev1.PersistentVolumeClaim // unbound WaitForFirstConsumer claims
	classes   map[string]*storagev1.StorageClass
	available []*corev1.PersistentVolume // volumes a delayed claim could bind to
	selected  string                     // a node already chosen for the delayed claims
	// readWriteOncePodInUse: a ReadWriteOncePod claim of the pod is used
	// by a pod already on a node (any node), which VolumeRestrictions
	// refuses on every node.
	readWriteOncePodInUse bool
	// readWriteOncePodUsers are those pods, for preemption.
	readWriteOncePodUsers []*corev1.Pod
	// readWriteOncePodClaims are the pod's ReadWriteOncePod claims, by
	// name.
	readWriteOncePodClaims []string
	// capacity says whether a volume of the claim's class and size can be
	// made for the node, when its driver publishes storage capacity.
	capacity func(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) bool
}

// verdict is one node's answer for a pod: why it does not fit (no
// reasons when it does; the volume binding plugin may give several), and
// whether preemption might make room (the real scheduler's Unschedulable,
// as opposed to UnschedulableAndUnresolvable).
type verdict struct {
	reasons     []string
	preemptible bool
	plugin      string // the filter plugin that rejected the node
}

func (v verdict) fits() bool { return len(v.reasons) == 0 }

// fits says whether node can run pod, checking what the real scheduler's
// filter plugins check, in their order, and stopping at the first that
// rejects the node: NodeUnschedulable, TaintToleration, NodeAffinity,
// NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding.
// running are the pods
// the node runs; overLimit is the volume limits check.
func fits(pod *corev1.Pod, node *corev1.Node, running []*corev1.Pod, vols podVolumes, overLimit func(*corev1.Node) bool) verdict {
	if node.Spec.Unschedulable && !tolerates(pod, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return verdict{reasons: []string{reasonUnschedulable}, plugin: "NodeUnschedulable"}
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); untolerated {
		return verdict{reasons: []string{reasonUntoleratedTaint}, plugin: "TaintToleration"}
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return verdict{reasons: []string{reasonNodeAffinity}, plugin: "NodeAffinity"}
	}
	if reasons, unresolvable := insufficientResources(pod, node, running); len(reasons) > 0 {
		return verdict{reasons: reasons, preemptible: !unresolvable, plugin: "NodeResourcesFit"}
	}
	// VolumeRestrictions: first a disk of the pod's that a pod on the node
	// has (diskconflict.go), then its ReadWriteOncePod check, which does
	// not depend on the node (its PreFilter counted the scheduled pods
	// using the pod's ReadWriteOncePod claims); both Unschedulable, so
	// that preemption may help where the other pod runs.
	if diskConflict(pod, running) {
		return verdict{reasons: []string{reasonDiskConflict}, preemptible: true, plugin: "VolumeRestrictions"}
	}
	if vols.readWriteOncePodInUse {
		return verdict{reasons: []string{reasonReadWriteOncePodConflict}, preemptible: true, plugin: "VolumeRestrictions"}
	}
	if overLimit(node) {
		return verdict{reasons: []string{reasonMaxVolumeCount}, preemptible: true, plugin: "NodeVolumeLimits"}
	}
	return verdict{reasons: volumeBinding(node, vols), plugin: "VolumeBinding"}
}

// acrossNodes are the filters that look at pods on other nodes too, with
// their PreFilter state for one pod: PodTopologySpread and
// InterPodAffinity, in that order, after the volume filters (VolumeZone,
// between them in the real order, is not modelled: CSI volumes carry
// their topology as node affinity, which VolumeBinding checks).
type acrossNodes struct {
	spread   spread
	affinity podAffinity
}

func newAcrossNodes(pod *corev1.Pod, sn snapshot) acrossNodes {
	return acrossNodes{spread: newSpread(pod, sn), affinity: newPodAffinity(pod, sn)}
}

// fitsAll is fits and then the filters across nodes.
func fitsAll(pod *corev1.Pod, node *corev1.Node, running []*corev1.Pod, vols podVolumes, overLimit func(*corev1.Node) bool, across acrossNodes) verdict {
	if v := fits(pod, node, running, vols, overLimit); !v.fits() {
		return v
	}
	if v := across.spread.filter(node); !v.fits() {
		return v
	}
	return across.affinity.filter(node)
}

// volumeBinding is the VolumeBinding plugin's filter. Its reasons: a bound
// volume the node cannot use; an unbound WaitForFirstConsumer claim whose
// node was already chosen elsewhere, or that has no static volume there
// and cannot be provisioned there (the same reason); too little capacity
// to provision there.
func volumeBinding(node *corev1.Node, vols podVolumes) []string {
	var reasons []string
	for _, pv := range vols.bound {
		if !volumeFits(pv, node) {
			reasons = append(reasons, reasonVolumeNodeAffinity)
			break
		}
	}
	if vols.selected != "" && vols.selected != node.Name {
		return append(reasons, reasonNoPersistentVolumes)
	}
	static := staticMatches(vols.delayed, vols.available, node)
	for _, claim := range vols.delayed {
		if claim.Annotations[storagehelpers.AnnSelectedNode] != "" || static[claim] != nil {
			continue
		}
		class := vols.classes[className(claim)]
		if class == nil || class.Provisioner == "" || class.Provisioner == storagehelpers.NotSupportedProvisioner || !allowedOn(class, node) {
			return append(reasons, reasonNoPersistentVolumes)
		}
		if vols.capacity != nil && !vols.capacity(claim, class, node) {
			return append(reasons, reasonNotEnoughStorage)
		}
	}
	return reasons
}

// exceedsVolumeLimits is the NodeVolumeLimits plugin's check. attached are
// the CSI volumes already on the node (used by its pods or attached to it
// by a VolumeAttachment) and wanted the pod's, both as unique name (driver
// and handle, or a claim still to be provisioned) to driver. A volume the
// node has already costs nothing; a pod that adds none always fits;
// otherwise, per driver with a limit in the node's CSINode, the node's
// volumes plus the pod's new ones must not exceed it.
func exceedsVolumeLimits(limits map[string]int32, attached, wanted map[string]string) bool {
	perDriver := map[string]int{}
	for _, driver := range attached {
		perDriver[driver]++
	}
	added := map[string]int{}
	for name, driver := range wanted {
		if _, ok := attached[name]; !ok {
			added[driver]++
		}
	}
	for driver, n := range added {
		if limit, ok := limits[driver]; ok && perDriver[driver]+n > int(limit) {
			return true
		}
	}
	return false
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

// staticMatches finds static volumes for a pod's unbound
// WaitForFirstConsumer claims on node, as the volume binding plugin does:
// claims in order of their request, smallest first, each taking a volume
// that no earlier claim took — a volume pre-bound to it if the node can
// use it, else the smallest Available volume of its class that matches its
// selector, volume mode, access modes and size and whose node affinity
// admits the node. Claims without a match are not in the result.
func staticMatches(claims []*corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, node *corev1.Node) map[*corev1.PersistentVolumeClaim]*corev1.PersistentVolume {
	sorted := slices.Clone(claims)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i].Spec.Resources.Requests[corev1.ResourceStorage], sorted[j].Spec.Resources.Requests[corev1.ResourceStorage]
		return a.Cmp(b) < 0
	})
	taken := map[string]bool{}
	out := map[*corev1.PersistentVolumeClaim]*corev1.PersistentVolume{}
	for _, claim := range sorted {
		if pv := staticMatch(claim, volumes, node, taken); pv != nil {
			taken[pv.Name] = true
			out[claim] = pv
		}
	}
	return out
}

func staticMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, node *corev1.Node, taken map[string]bool) *corev1.PersistentVolume {
	var selector labels.Selector
	if claim.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil {
			return nil
		}
		selector = sel
	}
	var best *corev1.PersistentVolume
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	for _, pv := range volumes {
		ref := pv.Spec.ClaimRef
		preBound := ref != nil && ref.Namespace == claim.Namespace && ref.Name == claim.Name && (ref.UID == "" || ref.UID == claim.UID)
		capacity := pv.Spec.Capacity[corev1.ResourceStorage]
		if taken[pv.Name] || (ref != nil && !preBound) || capacity.Cmp(request) < 0 ||
			volumeMode(pv.Spec.VolumeMode) != volumeMode(claim.Spec.VolumeMode) || pv.DeletionTimestamp != nil {
			continue
		}
		if preBound {
			if !volumeFits(pv, node) {
				return nil
			}
			return pv
		}
		if pv.Status.Phase != corev1.VolumeAvailable || (selector != nil && !selector.Matches(labels.Set(pv.Labels))) ||
			pv.Spec.StorageClassName != className(claim) || !volumeFits(pv, node) {
			continue
		}
		ok := true
		for _, m := range claim.Spec.AccessModes {
			ok = ok && contains(accessModes(pv), string(m))
		}
		if !ok {
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

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
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
// does from the nodes' verdicts: the count of nodes, then "N reason" for
// each reason, sorted as strings, then the postscript of the preemption
// that was tried (see preempt), if it nominated no node.
func failureMessage(total int, verdicts []verdict, postscript string) string {
	reasons := map[string]int{}
	for _, v := range verdicts {
		for _, r := range v.reasons {
			reasons[r]++
		}
	}
	msg := fmt.Sprintf("0/%d nodes are available: %s.", total, histogram(reasons))
	if postscript != "" {
		msg += " " + postscript
	}
	return msg
}

// preFilterMessage words a FailedScheduling event for a pod rejected
// before any node was looked at (VolumeBinding's PreFilter: a claim that
// is missing, being deleted, or unbound with immediate binding). In v1.37
// the postscript is not preemption's: the DynamicResources PostFilter,
// which runs first, finds no state of its own (its PreFilter never ran)
// and fails with the cycle state's "not found", which ends the message.
func preFilterMessage(total int, why string) string {
	return fmt.Sprintf("0/%d nodes are available: %s. not found", total, why)
}

func histogram(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
