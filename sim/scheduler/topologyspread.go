package scheduler

// The PodTopologySpread plugin, after v1.37's
// pkg/scheduler/framework/plugins/podtopologyspread (common.go,
// filtering.go, scoring.go): the pod's DoNotSchedule constraints as a
// filter, its ScheduleAnyway constraints (or, when it has none, the system
// default ones) as a score.

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// The plugin's reasons (podtopologyspread/plugin.go).
const (
	reasonSpreadConstraints = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissingKey  = reasonSpreadConstraints + " (missing required label)"
)

// systemDefaultSpread are the constraints the scheduler's default profile
// (defaultingType: System) gives a pod that has none, for the pods of its
// own workload (podtopologyspread/plugin.go, systemDefaultConstraints).
var systemDefaultSpread = []corev1.TopologySpreadConstraint{
	{TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 5},
}

// spreadConstraint is a topology spread constraint made ready: its
// selector (with matchLabelKeys merged in), minDomains (1 when unset), and
// node inclusion policies (nodeAffinityPolicy Honor and nodeTaintsPolicy
// Ignore when unset).
type spreadConstraint struct {
	maxSkew        int32
	key            string
	selector       labels.Selector
	minDomains     int32
	honorAffinity  bool
	honorTaints    bool
	requiredOfNode nodeaffinity.RequiredNodeAffinity
}

// spreadConstraints are the pod's constraints with the given action, or,
// when it has none at all, the system defaults with the selector of its
// workload (defaultSelector; none when that is empty).
func spreadConstraints(pod *corev1.Pod, action corev1.UnsatisfiableConstraintAction, defaultSelector labels.Selector) []spreadConstraint {
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		if action != corev1.ScheduleAnyway || defaultSelector == nil || defaultSelector.Empty() {
			return nil
		}
		cs := fromAPI(pod, systemDefaultSpread, action)
		for i := range cs {
			cs[i].selector = defaultSelector
		}
		return cs
	}
	return fromAPI(pod, pod.Spec.TopologySpreadConstraints, action)
}

func fromAPI(pod *corev1.Pod, constraints []corev1.TopologySpreadConstraint, action corev1.UnsatisfiableConstraintAction) []spreadConstraint {
	var out []spreadConstraint
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, c := range constraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			continue // the API server refuses it
		}
		if keys := matchLabels(pod, c.MatchLabelKeys); len(keys) > 0 {
			merged := labels.SelectorFromSet(keys)
			if reqs, ok := sel.Requirements(); ok {
				sel = merged.Add(reqs...)
			}
		}
		sc := spreadConstraint{maxSkew: c.MaxSkew, key: c.TopologyKey, selector: sel, minDomains: 1,
			honorAffinity: true, requiredOfNode: required}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			sc.honorAffinity = *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		}
		if c.NodeTaintsPolicy != nil {
			sc.honorTaints = *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		}
		out = append(out, sc)
	}
	return out
}

func matchLabels(pod *corev1.Pod, keys []string) labels.Set {
	set := labels.Set{}
	for _, k := range keys {
		if v, ok := pod.Labels[k]; ok {
			set[k] = v
		}
	}
	return set
}

// includes: the node counts for the constraint under its inclusion
// policies (the pod's required node affinity, the node's NoSchedule and
// NoExecute taints).
func (c spreadConstraint) includes(pod *corev1.Pod, node *corev1.Node) bool {
	if c.honorAffinity {
		if ok, _ := c.requiredOfNode.Match(node); !ok {
			return false
		}
	}
	if c.honorTaints {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}, false); untolerated {
			return false
		}
	}
	return true
}

// hasKeys: the node has every constraint's topology key.
func hasKeys(node *corev1.Node, cs []spreadConstraint) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.key]; !ok {
			return false
		}
	}
	return true
}

// matching counts the pods of the namespace, not being deleted, that the
// selector matches.
func matching(pods []*corev1.Pod, sel labels.Selector, ns string) int {
	if sel.Empty() {
		return 0
	}
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// spread is the plugin's PreFilter state: the pod's DoNotSchedule
// constraints and, per constraint, the matching pods in each domain of the
// nodes that have every constraint's key and that the constraint includes.
type spread struct {
	pod         *corev1.Pod
	constraints []spreadConstraint
	counts      []map[string]int
}

func newSpread(pod *corev1.Pod, sn snapshot) spread {
	st := spread{pod: pod, constraints: spreadConstraints(pod, corev1.DoNotSchedule, nil)}
	for range st.constraints {
		st.counts = append(st.counts, map[string]int{})
	}
	for _, node := range sn.nodes {
		if !hasKeys(node, st.constraints) {
			continue
		}
		for i, c := range st.constraints {
			if c.includes(pod, node) {
				st.counts[i][node.Labels[c.key]] += matching(sn.pods[node.Name], c.selector, pod.Namespace)
			}
		}
	}
	return st
}

// filter is the plugin's Filter: for each constraint, the node must have
// its key, and the pod there must not make the skew — its domain's
// matching pods, plus itself if it matches, less the fewest of any
// domain (0 when there are fewer domains than minDomains) — exceed
// maxSkew.
func (st spread) filter(node *corev1.Node) verdict {
	for i, c := range st.constraints {
		v, ok := node.Labels[c.key]
		if !ok {
			return verdict{reasons: []string{reasonSpreadMissingKey}, plugin: "PodTopologySpread"}
		}
		least := math.MaxInt32
		for _, n := range st.counts[i] {
			least = min(least, n)
		}
		if len(st.counts[i]) < int(c.minDomains) {
			least = 0
		}
		self := 0
		if c.selector.Matches(labels.Set(st.pod.Labels)) {
			self = 1
		}
		if st.counts[i][v]+self-least > int(c.maxSkew) {
			return verdict{reasons: []string{reasonSpreadConstraints}, preemptible: true, plugin: "PodTopologySpread"}
		}
	}
	return verdict{}
}

// spreadScores is the plugin's score of each feasible node, normalised to
// 0..100 (fewer matching pods in the node's domains score higher): per
// ScheduleAnyway constraint, the matching pods in the node's domain (on
// the node itself for kubernetes.io/hostname) weighted by the log of the
// number of domains among the feasible nodes, plus maxSkew-1. With the
// pod's own constraints, nodes lacking a key score 0. Nil when the pod has
// no such constraint (the plugin skips).
func spreadScores(pod *corev1.Pod, sn snapshot, feasible []*corev1.Node, defaultSelector labels.Selector) map[string]int64 {
	cs := spreadConstraints(pod, corev1.ScheduleAnyway, defaultSelector)
	if len(cs) == 0 {
		return nil
	}
	requireAll := len(pod.Spec.TopologySpreadConstraints) > 0
	ignored := map[string]bool{}
	counts := make([]map[string]int, len(cs))
	for i := range cs {
		counts[i] = map[string]int{}
	}
	for _, node := range feasible {
		if requireAll && !hasKeys(node, cs) {
			ignored[node.Name] = true
			continue
		}
		for i, c := range cs {
			if c.key != corev1.LabelHostname {
				counts[i][node.Labels[c.key]] = 0
			}
		}
	}
	weights := make([]float64, len(cs))
	for i, c := range cs {
		size := len(counts[i])
		if c.key == corev1.LabelHostname {
			size = len(feasible) - len(ignored)
		}
		weights[i] = math.Log(float64(size + 2))
	}
	for _, node := range sn.nodes {
		if requireAll && !hasKeys(node, cs) {
			continue
		}
		for i, c := range cs {
			v := node.Labels[c.key]
			if _, domain := counts[i][v]; domain && c.includes(pod, node) {
				counts[i][v] += matching(sn.pods[node.Name], c.selector, pod.Namespace)
			}
		}
	}
	raw := map[string]int64{}
	for _, node := range feasible {
		if ignored[node.Name] {
			continue
		}
		var score float64
		for i, c := range cs {
			v, ok := node.Labels[c.key]
			if !ok {
				continue
			}
			n := counts[i][v]
			if c.key == corev1.LabelHostname {
				n = matching(sn.pods[node.Name], c.selector, pod.Namespace)
			}
			score += float64(n)*weights[i] + float64(c.maxSkew-1)
		}
		raw[node.Name] = int64(math.Round(score))
	}
	return normalizeSpread(feasible, raw, ignored)
}

// normalizeSpread is the plugin's NormalizeScore: the fewer, the better;
// ignored nodes score 0.
func normalizeSpread(feasible []*corev1.Node, raw map[string]int64, ignored map[string]bool) map[string]int64 {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range raw {
		lo, hi = min(lo, s), max(hi, s)
	}
	out := map[string]int64{}
	for _, node := range feasible {
		switch s := raw[node.Name]; {
		case ignored[node.Name]:
			out[node.Name] = 0
		case hi == 0:
			out[node.Name] = maxNodeScore
		default:
			out[node.Name] = maxNodeScore * (hi + lo - s) / hi
		}
	}
	return out
}
