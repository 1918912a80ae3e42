package scheduler

// The InterPodAffinity plugin, after v1.37's
// pkg/scheduler/framework/plugins/interpodaffinity (filtering.go and
// scoring.go): required pod affinity and anti-affinity of the pod, the
// required anti-affinity of the pods already placed, and the preferred
// terms of both sides as a score.

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The plugin's reasons (interpodaffinity/filtering.go).
const (
	reasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
	reasonPodAffinity          = "node(s) didn't match pod affinity rules"
	reasonPodAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
)

// hardPodAffinityWeight is the plugin's default HardPodAffinityWeight: the
// score a pod's required affinity gives the pods it would attract.
const hardPodAffinityWeight = 1

// affinityTerm is a pod affinity term made ready to match pods: the
// namespaces it names (the pod's own when it names none and has no
// selector), its namespace selector (nothing when it has none), and its
// label selector.
type affinityTerm struct {
	namespaces  sets.Set[string]
	nsSelector  labels.Selector
	selector    labels.Selector
	topologyKey string
	weight      int32
}

// matches: the pod is in one of the term's namespaces and has its labels.
func (t affinityTerm) matches(pod *corev1.Pod) bool {
	if t.namespaces.Has(pod.Namespace) || t.nsSelector.Matches(namespaceLabels(pod.Namespace)) {
		return t.selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

func newAffinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm, weight int32) (affinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return affinityTerm{}, err
	}
	nsSel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return affinityTerm{}, err
	}
	ns := sets.New(term.Namespaces...)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		ns.Insert(pod.Namespace)
	}
	return affinityTerm{namespaces: ns, nsSelector: nsSel, selector: sel, topologyKey: term.TopologyKey, weight: weight}, nil
}

// podTerms are a pod's affinity terms, required and preferred, of its pod
// affinity and anti-affinity. Terms whose selectors do not parse are left
// out (the API server refuses them).
type podTerms struct {
	affinity, antiAffinity                   []affinityTerm
	preferredAffinity, preferredAntiAffinity []affinityTerm
}

func termsOf(pod *corev1.Pod) podTerms {
	var out podTerms
	a := pod.Spec.Affinity
	if a == nil {
		return out
	}
	required := func(terms []corev1.PodAffinityTerm) []affinityTerm {
		var ts []affinityTerm
		for i := range terms {
			if t, err := newAffinityTerm(pod, &terms[i], 0); err == nil {
				ts = append(ts, t)
			}
		}
		return ts
	}
	preferred := func(terms []corev1.WeightedPodAffinityTerm) []affinityTerm {
		var ts []affinityTerm
		for i := range terms {
			if t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm, terms[i].Weight); err == nil {
				ts = append(ts, t)
			}
		}
		return ts
	}
	if a.PodAffinity != nil {
		out.affinity = required(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		out.preferredAffinity = preferred(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if a.PodAntiAffinity != nil {
		out.antiAffinity = required(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		out.preferredAntiAffinity = preferred(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

// matchesAll: the pod matches every term (and there is at least one).
func matchesAll(terms []affinityTerm, pod *corev1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !t.matches(pod) {
			return false
		}
	}
	return true
}

// podAffinity is the plugin's PreFilter state for one pod: per topology
// pair, how many placed pods match all of its required affinity terms,
// match one of its anti-affinity terms, and have an anti-affinity term the
// pod matches.
type podAffinity struct {
	pod                          *corev1.Pod
	terms                        podTerms
	affinity, anti, existingAnti map[topologyPair]int64
}

func newPodAffinity(pod *corev1.Pod, sn snapshot) podAffinity {
	st := podAffinity{pod: pod, terms: termsOf(pod),
		affinity: map[topologyPair]int64{}, anti: map[topologyPair]int64{}, existingAnti: map[topologyPair]int64{}}
	count := func(m map[topologyPair]int64, node *corev1.Node, key string) {
		if v, ok := node.Labels[key]; ok {
			m[topologyPair{key, v}]++
		}
	}
	for _, node := range sn.nodes {
		for _, p := range sn.pods[node.Name] {
			if matchesAll(st.terms.affinity, p) {
				for _, t := range st.terms.affinity {
					count(st.affinity, node, t.topologyKey)
				}
			}
			for _, t := range st.terms.antiAffinity {
				if t.matches(p) {
					count(st.anti, node, t.topologyKey)
				}
			}
			for _, t := range termsOf(p).antiAffinity {
				if t.matches(pod) {
					count(st.existingAnti, node, t.topologyKey)
				}
			}
		}
	}
	return st
}

// filter is the plugin's Filter: the pod's required affinity (a node
// without a term's topology key, or whose domain has no matching pod,
// unless no pod anywhere matches and the pod matches its own terms), its
// required anti-affinity, and the placed pods' anti-affinity against it.
// Only an affinity refusal is beyond preemption's help.
func (st podAffinity) filter(node *corev1.Node) verdict {
	if len(st.terms.affinity) > 0 {
		podsExist := true
		for _, t := range st.terms.affinity {
			v, ok := node.Labels[t.topologyKey]
			if !ok {
				return verdict{reasons: []string{reasonPodAffinity}, plugin: "InterPodAffinity"}
			}
			if st.affinity[topologyPair{t.topologyKey, v}] <= 0 {
				podsExist = false
			}
		}
		if !podsExist && !(len(st.affinity) == 0 && matchesAll(st.terms.affinity, st.pod)) {
			return verdict{reasons: []string{reasonPodAffinity}, plugin: "InterPodAffinity"}
		}
	}
	for _, t := range st.terms.antiAffinity {
		if v, ok := node.Labels[t.topologyKey]; ok && st.anti[topologyPair{t.topologyKey, v}] > 0 {
			return verdict{reasons: []string{reasonPodAntiAffinity}, preemptible: true, plugin: "InterPodAffinity"}
		}
	}
	for k, v := range node.Labels {
		if st.existingAnti[topologyPair{k, v}] > 0 {
			return verdict{reasons: []string{reasonExistingAntiAffinity}, preemptible: true, plugin: "InterPodAffinity"}
		}
	}
	return verdict{}
}

// podAffinityScores is the plugin's score of each feasible node,
// normalised to 0..100: per topology pair, the weights of the pod's
// preferred terms that placed pods match (anti-affinity counting against),
// of the placed pods' preferred terms the pod matches, and
// hardPodAffinityWeight for each of their required affinity terms the pod
// matches. Nil when nothing scores (the plugin skips).
func podAffinityScores(pod *corev1.Pod, sn snapshot, feasible []*corev1.Node) map[string]int64 {
	own := termsOf(pod)
	scores := map[topologyPair]int64{}
	add := func(terms []affinityTerm, p *corev1.Pod, node *corev1.Node, weight func(affinityTerm) int64) {
		for _, t := range terms {
			if v, ok := node.Labels[t.topologyKey]; ok && t.matches(p) {
				scores[topologyPair{t.topologyKey, v}] += weight(t)
			}
		}
	}
	plus := func(t affinityTerm) int64 { return int64(t.weight) }
	minus := func(t affinityTerm) int64 { return -int64(t.weight) }
	hard := func(affinityTerm) int64 { return hardPodAffinityWeight }
	for _, node := range sn.nodes {
		if len(node.Labels) == 0 {
			continue
		}
		for _, p := range sn.pods[node.Name] {
			add(own.preferredAffinity, p, node, plus)
			add(own.preferredAntiAffinity, p, node, minus)
			theirs := termsOf(p)
			add(theirs.affinity, pod, node, hard)
			add(theirs.preferredAffinity, pod, node, plus)
			add(theirs.preferredAntiAffinity, pod, node, minus)
		}
	}
	if len(scores) == 0 {
		return nil
	}
	raw := map[string]int64{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, node := range feasible {
		var s int64
		for pair, w := range scores {
			if v, ok := node.Labels[pair.key]; ok && v == pair.value {
				s += w
			}
		}
		raw[node.Name] = s
		lo, hi = min(lo, s), max(hi, s)
	}
	out := map[string]int64{}
	for name, s := range raw {
		if hi > lo {
			out[name] = int64(float64(maxNodeScore) * float64(s-lo) / float64(hi-lo))
		} else {
			out[name] = 0
		}
	}
	return out
}
