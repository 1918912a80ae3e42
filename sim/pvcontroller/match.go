package pvcontroller

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// bestMatch picks the volume a claim binds to, as the real controller's
// volume index does: a volume pre-bound to the claim wins; otherwise the
// smallest Available volume that is of the claim's class, offers every
// access mode the claim asks for, has its volume mode, is at least as big
// as the request and carries the labels the claim's selector asks for.
func bestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume) *corev1.PersistentVolume {
	var candidates []*corev1.PersistentVolume
	for _, pv := range volumes {
		if pv.DeletionTimestamp != nil {
			continue
		}
		if ref := pv.Spec.ClaimRef; ref != nil {
			if ref.Namespace == claim.Namespace && ref.Name == claim.Name && (ref.UID == "" || ref.UID == claim.UID) {
				return pv // pre-bound to this claim
			}
			continue // someone else's
		}
		if claim.Spec.VolumeName != "" && claim.Spec.VolumeName != pv.Name {
			continue
		}
		if matches(claim, pv) {
			candidates = append(candidates, pv)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i].Spec.Capacity[corev1.ResourceStorage], candidates[j].Spec.Capacity[corev1.ResourceStorage]
		if c := a.Cmp(b); c != 0 {
			return c < 0
		}
		return candidates[i].Name < candidates[j].Name
	})
	return candidates[0]
}

func matches(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	if storageClassName(claim) != pv.Spec.StorageClassName {
		return false
	}
	for _, m := range claim.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			return false
		}
	}
	if volumeMode(claim.Spec.VolumeMode) != volumeMode(pv.Spec.VolumeMode) {
		return false
	}
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	if capacity.Cmp(request) < 0 {
		return false
	}
	if claim.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pv.Labels)) {
			return false
		}
	}
	return pv.Status.Phase == corev1.VolumeAvailable || pv.Status.Phase == corev1.VolumePending || pv.Status.Phase == ""
}

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}
