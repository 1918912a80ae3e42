package statefulset

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"

	"github.com/csisim/csisim/sim/controller"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
)

// The kinds the controller sets owner references to.
var (
	setKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	podKind = corev1.SchemeGroupVersion.WithKind("Pod")
)

// ControllerRevisionHashLabel is the label a ControllerRevision carries
// with its hash (kubernetes pkg/controller/history/controller_history.go).
const ControllerRevisionHashLabel = "controller.kubernetes.io/hash"

// A member pod is named <set>-<ordinal> (stateful_set_utils.go).
var memberName = regexp.MustCompile("(.*)-([0-9]+)$")

// parentAndOrdinal: the set a pod's name says it belongs to, and its
// ordinal; -1 when the name has none.
func parentAndOrdinal(pod *corev1.Pod) (string, int) {
	m := memberName.FindStringSubmatch(pod.Name)
	if len(m) < 3 {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(i)
}

func ordinalOf(pod *corev1.Pod) int { _, o := parentAndOrdinal(pod); return o }

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// inRange: the pod's ordinal is one the set wants now.
func inRange(pod *corev1.Pod, set *appsv1.StatefulSet) bool {
	o := ordinalOf(pod)
	return o >= startOrdinal(set) && o < startOrdinal(set)+replicasOf(set)
}

// PodName is the name of the set's pod of ordinal.
func PodName(set string, ordinal int) string { return fmt.Sprintf("%s-%d", set, ordinal) }

// ClaimName is the name of the claim a template makes for the set's pod of
// ordinal: <template>-<set>-<ordinal>.
func ClaimName(template, set string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set, ordinal)
}

// claimsFor are the claims the set's templates make for pod, in the order
// of the templates: each named for the pod's ordinal, labelled with the
// template's labels and the set's selector's matchLabels.
func claimsFor(set *appsv1.StatefulSet, pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	ordinal := ordinalOf(pod)
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		claim := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		tmpl := claim.Name
		claim.Name = ClaimName(tmpl, set.Name, ordinal)
		claim.Namespace = set.Namespace
		claim.Status = corev1.PersistentVolumeClaimStatus{}
		if claim.Labels == nil {
			claim.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				claim.Labels[k] = v
			}
		}
		out = append(out, claim)
	}
	return out
}

// newPod is the set's pod of ordinal at revision: the template, the
// controller reference, the identity (name, labels, hostname, subdomain)
// and a volume for each claim template in place of the template's volume
// of that name.
func newPod(set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName(set.Name, ordinal), Namespace: set.Namespace,
			Labels: t.Labels, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, setKind)},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	setStorage(set, pod)
	return pod
}

// setStorage gives the pod a volume for each claim template, replacing the
// pod's volume of the same name. The real controller orders the claims'
// volumes by a map's iteration (random); the simulation keeps the
// templates' order.
func setStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	claims := claimsFor(set, pod)
	byTemplate := map[string]bool{}
	vols := make([]corev1.Volume, 0, len(claims)+len(pod.Spec.Volumes))
	for i, c := range claims {
		tmpl := set.Spec.VolumeClaimTemplates[i].Name
		byTemplate[tmpl] = true
		vols = append(vols, corev1.Volume{Name: tmpl, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	for _, v := range pod.Spec.Volumes {
		if !byTemplate[v.Name] {
			vols = append(vols, v)
		}
	}
	pod.Spec.Volumes = vols
}

// identityMatches and storageMatches: the pod is as the set makes it.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, ordinal := parentAndOrdinal(pod)
	return ordinal >= 0 && parent == set.Name && pod.Name == PodName(set.Name, ordinal) &&
		pod.Namespace == set.Namespace && pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

func storageMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	ordinal := ordinalOf(pod)
	if ordinal < 0 {
		return false
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, t := range set.Spec.VolumeClaimTemplates {
		v, ok := vols[t.Name]
		if !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != ClaimName(t.Name, set.Name, ordinal) {
			return false
		}
	}
	return true
}

// retentionPolicy is the set's claim retention policy, Retain for what it
// leaves out.
func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if set.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		p = *set.Spec.PersistentVolumeClaimRetentionPolicy
	}
	return p
}

func matchesRef(ref metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

func hasOwnerRef(target, owner metav1.Object) bool {
	for _, r := range target.GetOwnerReferences() {
		if r.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// hasStaleOwnerRef: a reference that names obj with another UID (an
// earlier object of the same name).
func hasStaleOwnerRef(target, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	for _, r := range target.GetOwnerReferences() {
		if matchesRef(r, obj, gvk) {
			return r.UID != obj.GetUID()
		}
	}
	return false
}

// unexpectedController: under a policy that deletes, the claim has a
// controller other than the set and the pod, or stale references to them.
func unexpectedController(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	p := retentionPolicy(set)
	if p.WhenScaled == appsv1.RetainPersistentVolumeClaimRetentionPolicyType && p.WhenDeleted == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		return false
	}
	for _, r := range claim.OwnerReferences {
		switch {
		case matchesRef(r, set, setKind):
			if r.UID != set.UID {
				return true
			}
		case matchesRef(r, pod, podKind):
			if r.UID != pod.UID {
				return true
			}
		case r.Controller != nil && *r.Controller:
			return true
		}
	}
	return false
}

// wantedOwners: which of the set and the pod the policy wants as the
// claim's owners (kubernetes stateful_set_utils.go
// updateClaimOwnerRefForSetAndPod): the set when the claim goes with the
// set, the pod when it goes with a scale down that removed the pod.
func wantedOwners(set *appsv1.StatefulSet, pod *corev1.Pod) (bySet, byPod bool) {
	p := retentionPolicy(set)
	del := appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	scaledDown := !inRange(pod, set)
	switch {
	case p.WhenScaled != del && p.WhenDeleted == del:
		return true, false
	case p.WhenScaled == del && p.WhenDeleted != del:
		return false, scaledDown
	case p.WhenScaled == del && p.WhenDeleted == del:
		return !scaledDown, scaledDown
	}
	return false, false
}

// claimOwnersMatch: the claim's owner references are what the policy
// wants (claimOwnerMatchesSetAndPod).
func claimOwnersMatch(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if hasStaleOwnerRef(claim, set, setKind) || hasStaleOwnerRef(claim, pod, podKind) {
		// An earlier set's or pod's: left alone.
		return true
	}
	if unexpectedController(claim, set, pod) {
		return !hasOwnerRef(claim, set) && !hasOwnerRef(claim, pod)
	}
	for _, r := range claim.OwnerReferences {
		if (r.UID == set.UID || r.UID == pod.UID) && (r.Controller == nil || !*r.Controller) {
			return false
		}
	}
	bySet, byPod := wantedOwners(set, pod)
	return hasOwnerRef(claim, set) == bySet && hasOwnerRef(claim, pod) == byPod
}

// setClaimOwners rewrites the claim's references to the set and the pod
// as the policy wants them: controller references.
func setClaimOwners(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) {
	unexpected := unexpectedController(claim, set, pod)
	refs := []metav1.OwnerReference{}
	for _, r := range claim.OwnerReferences {
		if !matchesRef(r, set, setKind) && !matchesRef(r, pod, podKind) {
			refs = append(refs, r)
		}
	}
	if !unexpected {
		bySet, byPod := wantedOwners(set, pod)
		if byPod {
			refs = append(refs, *metav1.NewControllerRef(pod, podKind))
		}
		if bySet {
			refs = append(refs, *metav1.NewControllerRef(set, setKind))
		}
	}
	claim.OwnerReferences = refs
}

// revisionPatch is what a ControllerRevision of the set stores: the pod
// template as a strategic merge patch that replaces it
// (stateful_set_utils.go getPatch).
func revisionPatch(set *appsv1.StatefulSet) ([]byte, error) {
	return controller.TemplateRevisionPatch(set.Spec.Template)
}

// hashRevision is the hash that names a ControllerRevision: FNV-1 32 of
// its data and the collision count, rendered safe
// (pkg/controller/history HashControllerRevision).
func hashRevision(data []byte, collisionCount int32) string {
	h := fnv.New32()
	h.Write(data)
	h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// newRevision is the set's ControllerRevision of its current template.
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount int32) (*appsv1.ControllerRevision, error) {
	patch, err := revisionPatch(set)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range set.Spec.Template.Labels {
		labels[k] = v
	}
	hash := hashRevision(patch, collisionCount)
	labels[ControllerRevisionHashLabel] = hash
	annotations := map[string]string{}
	for k, v := range set.Annotations {
		annotations[k] = v
	}
	prefix := set.Name
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + hash, Namespace: set.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, setKind)}},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}, nil
}

// RevisionName is the name of the set's ControllerRevision of its current
// template: <set>-<hash>.
func RevisionName(set *appsv1.StatefulSet, collisionCount int32) (string, error) {
	r, err := newRevision(set, 0, collisionCount)
	if err != nil {
		return "", err
	}
	return r.Name, nil
}
