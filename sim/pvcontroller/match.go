package pvcontroller

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// bestMatch picks the volume a claim without spec.volumeName binds to, as
// the real controller's volume index does. Volumes are grouped by their set
// of access modes; the groups that offer every mode the claim asks for are
// searched in order of how few modes they have, so a volume with exactly
// the claim's modes beats a bigger set even when it is larger. Within a
// group, a volume pre-bound to the claim (its claimRef names the claim)
// wins if it is big enough and of the claim's volume mode — class and
// selector are not checked for it; otherwise the smallest Available volume
// of the claim's class, volume mode and selector that is big enough. With
// delayed binding (WaitForFirstConsumer) only a pre-bound volume is
// returned: the scheduler chooses the others.
func bestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayed bool) *corev1.PersistentVolume {
	groups := map[string][]*corev1.PersistentVolume{}
	for _, pv := range volumes {
		key := modesKey(pv.Spec.AccessModes)
		groups[key] = append(groups[key], pv)
	}
	var keys []string
	for key := range groups {
		if containsAll(strings.Split(key, ","), claim.Spec.AccessModes) {
			keys = append(keys, key)
		}
	}
	// Fewest modes first; the real index leaves ties in map order, here
	// they are ordered by name so that runs repeat.
	sort.Slice(keys, func(i, j int) bool {
		ni, nj := strings.Count(keys[i], ","), strings.Count(keys[j], ",")
		if ni != nj {
			return ni < nj
		}
		return keys[i] < keys[j]
	})
	for _, key := range keys {
		if pv := bestInGroup(claim, groups[key], delayed); pv != nil {
			return pv
		}
	}
	return nil
}

func bestInGroup(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayed bool) *corev1.PersistentVolume {
	var selector labels.Selector
	if claim.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil {
			return nil // validation keeps invalid selectors out
		}
		selector = s
	}
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	var best *corev1.PersistentVolume
	for _, pv := range volumes {
		if pv.Spec.ClaimRef != nil && !boundToClaim(pv, claim) {
			continue // someone else's
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		if size.Cmp(request) < 0 || volumeModeMismatch(claim, pv) || attributesClassMismatch(claim, pv) || pv.DeletionTimestamp != nil {
			continue
		}
		if boundToClaim(pv, claim) {
			return pv
		}
		if delayed || pv.Status.Phase != corev1.VolumeAvailable {
			continue
		}
		if selector != nil && !selector.Matches(labels.Set(pv.Labels)) {
			continue
		}
		if pv.Spec.StorageClassName != storagehelpers.GetPersistentVolumeClaimClass(claim) {
			continue
		}
		if best == nil {
			best = pv
			continue
		}
		bestSize := best.Spec.Capacity[corev1.ResourceStorage]
		if c := bestSize.Cmp(size); c > 0 || (c == 0 && pv.Name < best.Name) {
			best = pv
		}
	}
	return best
}

// boundToClaim: the volume's claimRef names the claim, and its UID (if
// set) is the claim's.
func boundToClaim(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name {
		return false
	}
	return ref.UID == "" || ref.UID == claim.UID
}

// checkRequested says why a volume a claim asks for by spec.volumeName does
// not satisfy it, in the real controller's words and order, or nil.
func checkRequested(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	if pv.DeletionTimestamp != nil {
		return fmt.Errorf("the volume is marked for deletion %q", pv.Name)
	}
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	if size.Value() < request.Value() {
		return errors.New("requested PV is too small")
	}
	if pv.Spec.StorageClassName != storagehelpers.GetPersistentVolumeClaimClass(claim) {
		return errors.New("storageClassName does not match")
	}
	if attributesClassMismatch(claim, pv) {
		return errors.New("volumeAttributesClassName does not match")
	}
	if volumeModeMismatch(claim, pv) {
		return errors.New("incompatible volumeMode")
	}
	if !containsAll(modeStrings(pv.Spec.AccessModes), claim.Spec.AccessModes) {
		return errors.New("incompatible accessMode")
	}
	return nil
}

// attributesClassMismatch: the claim and the volume name different
// VolumeAttributesClasses (none is ""); such a volume is never bound to
// the claim (VolumeAttributesClass is GA, on in v1.37).
func attributesClassMismatch(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	return ptr.Deref(claim.Spec.VolumeAttributesClassName, "") != ptr.Deref(pv.Spec.VolumeAttributesClassName, "")
}

// volumeModeMismatch: the API server defaults both modes to Filesystem.
func volumeModeMismatch(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	return volumeMode(claim.Spec.VolumeMode) != volumeMode(pv.Spec.VolumeMode)
}

func volumeMode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

func modesKey(modes []corev1.PersistentVolumeAccessMode) string {
	s := modeStrings(modes)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

func modeStrings(modes []corev1.PersistentVolumeAccessMode) []string {
	out := make([]string, 0, len(modes))
	for _, m := range modes {
		out = append(out, string(m))
	}
	return out
}

func containsAll(have []string, want []corev1.PersistentVolumeAccessMode) bool {
	for _, m := range want {
		if !slices.Contains(have, string(m)) {
			return false
		}
	}
	return true
}
