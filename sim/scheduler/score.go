package scheduler

// Scoring: which of the nodes a pod fits on it goes to, as v1.37's
// schedulePod and prioritizeNodes do it (pkg/scheduler/schedule_one.go).
// With one feasible node there is nothing to score. Otherwise each score
// plugin of the default profile gives each feasible node 0..100, the
// scores are summed with the plugins' weights
// (pkg/scheduler/apis/config/v1/default_plugins.go), and the node with the
// highest sum wins. The real selectHost picks at random among nodes with
// the same highest sum; csisim takes the first of them by name, so that a
// run does not depend on the seed's draws here (a scenario that needs a
// particular node among equals should pin it, as it must on a real
// cluster).

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// maxNodeScore is the framework's MaxNodeScore.
const maxNodeScore = 100

// The weights of the default profile's score plugins
// (pkg/scheduler/apis/config/v1/default_plugins.go; a plugin without a
// weight counts 1). ImageLocality (weight 1) is left out: csisim's nodes
// report no images, so it scores every node 0.
const (
	weightTaintToleration   = 3
	weightNodeAffinity      = 2
	weightNodeResourcesFit  = 1
	weightPodTopologySpread = 2
	weightInterPodAffinity  = 2
	weightBalancedAlloc     = 1
	weightVolumeBinding     = 1
)

// The requests the scheduler assumes for a container that asks for no CPU
// or memory when it scores (pkg/scheduler/util/pod_resources.go).
var nonZeroRequests = corev1.ResourceList{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(100, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(200*1024*1024, resource.DecimalSI),
}

// scoreInput is what the score plugins read besides the pod and nodes.
type scoreInput struct {
	snapshot snapshot
	// defaultSelector selects the pods of the pod's workload, for the
	// system default spread constraints.
	defaultSelector labels.Selector
	// volumeScore is VolumeBinding's score of a node (nil: every node 0).
	volumeScore func(node *corev1.Node) int64
}

// selectNode returns the feasible node (in name order) with the highest
// weighted sum of scores, the first by name among equals.
func selectNode(pod *corev1.Pod, feasible []*corev1.Node, in scoreInput) *corev1.Node {
	if len(feasible) == 1 {
		return feasible[0]
	}
	total := totalScores(pod, feasible, in)
	best := feasible[0]
	for _, n := range feasible[1:] {
		if total[n.Name] > total[best.Name] {
			best = n
		}
	}
	return best
}

// totalScores is the weighted sum of every score plugin's normalised
// score, per node. A plugin that skips adds nothing.
func totalScores(pod *corev1.Pod, feasible []*corev1.Node, in scoreInput) map[string]int64 {
	total := map[string]int64{}
	add := func(weight int64, scores map[string]int64) {
		for name, s := range scores {
			total[name] += weight * s
		}
	}
	add(weightTaintToleration, taintScores(pod, feasible))
	add(weightNodeAffinity, nodeAffinityScores(pod, feasible))
	add(weightNodeResourcesFit, perNode(feasible, func(n *corev1.Node) int64 { return leastAllocated(pod, n, in.snapshot.pods[n.Name]) }))
	add(weightPodTopologySpread, spreadScores(pod, in.snapshot, feasible, in.defaultSelector))
	add(weightInterPodAffinity, podAffinityScores(pod, in.snapshot, feasible))
	if !bestEffort(pod) {
		add(weightBalancedAlloc, perNode(feasible, func(n *corev1.Node) int64 { return balancedAllocation(pod, n, in.snapshot.pods[n.Name]) }))
	}
	if in.volumeScore != nil {
		add(weightVolumeBinding, perNode(feasible, in.volumeScore))
	}
	return total
}

func perNode(nodes []*corev1.Node, score func(*corev1.Node) int64) map[string]int64 {
	out := make(map[string]int64, len(nodes))
	for _, n := range nodes {
		out[n.Name] = score(n)
	}
	return out
}

// taintScores is TaintToleration's score: the node's PreferNoSchedule
// taints the pod does not tolerate, fewer is better (normalised reversed).
func taintScores(pod *corev1.Pod, feasible []*corev1.Node) map[string]int64 {
	var tolerations []corev1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			tolerations = append(tolerations, t)
		}
	}
	raw := perNode(feasible, func(n *corev1.Node) int64 {
		var count int64
		for i := range n.Spec.Taints {
			t := &n.Spec.Taints[i]
			if t.Effect != corev1.TaintEffectPreferNoSchedule {
				continue
			}
			if !tolerates(&corev1.Pod{Spec: corev1.PodSpec{Tolerations: tolerations}}, *t) {
				count++
			}
		}
		return count
	})
	return defaultNormalize(raw, true)
}

// nodeAffinityScores is NodeAffinity's score: the weights of the pod's
// preferred node affinity terms the node matches. Nil when it has none.
func nodeAffinityScores(pod *corev1.Pod, feasible []*corev1.Node) map[string]int64 {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return nil
	}
	return defaultNormalize(perNode(feasible, terms.Score), false)
}

// defaultNormalize is the plugins' helper.DefaultNormalizeScore: scaled so
// that the highest is 100 (reversed: 100 less that); all 0 stays 0
// (reversed: all 100).
func defaultNormalize(raw map[string]int64, reverse bool) map[string]int64 {
	var hi int64
	for _, s := range raw {
		hi = max(hi, s)
	}
	out := make(map[string]int64, len(raw))
	for name, s := range raw {
		switch {
		case hi == 0 && reverse:
			out[name] = maxNodeScore
		case hi == 0:
			out[name] = 0
		case reverse:
			out[name] = maxNodeScore - maxNodeScore*s/hi
		default:
			out[name] = maxNodeScore * s / hi
		}
	}
	return out
}

// cpuAndMemory are what NodeResourcesFit's and
// NodeResourcesBalancedAllocation's scores look at by default (weight 1
// each): milli-CPU and bytes of memory, requested and allocatable.
func cpuAndMemory(list corev1.ResourceList) [2]int64 {
	return [2]int64{list.Cpu().MilliValue(), list.Memory().Value()}
}

// requested sums the pods' requests, with the non-zero defaults for
// containers that ask for nothing when nonZero.
func requested(pods []*corev1.Pod, nonZero bool) [2]int64 {
	var sum [2]int64
	for _, p := range pods {
		r := podScoreRequests(p, nonZero)
		sum[0], sum[1] = sum[0]+r[0], sum[1]+r[1]
	}
	return sum
}

func podScoreRequests(pod *corev1.Pod, nonZero bool) [2]int64 {
	opts := resourcehelper.PodResourcesOptions{}
	if nonZero {
		opts.NonMissingContainerRequests = nonZeroRequests
	}
	return cpuAndMemory(resourcehelper.PodRequests(pod, opts))
}

func bestEffort(pod *corev1.Pod) bool {
	r := podScoreRequests(pod, false)
	return r[0] == 0 && r[1] == 0
}

// leastAllocated is NodeResourcesFit's score with its default
// LeastAllocated strategy: per resource the node has, the share left free
// with the pod (its non-zero requests) on it, averaged.
func leastAllocated(pod *corev1.Pod, node *corev1.Node, running []*corev1.Pod) int64 {
	alloc := cpuAndMemory(node.Status.Allocatable)
	used := requested(running, true)
	want := podScoreRequests(pod, true)
	var score, weights int64
	for i := range alloc {
		if alloc[i] == 0 {
			continue
		}
		if r := used[i] + want[i]; r <= alloc[i] {
			score += (alloc[i] - r) * maxNodeScore / alloc[i]
		}
		weights++
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// balancedAllocation is NodeResourcesBalancedAllocation's score: how much
// the pod (its requests as they are) improves the balance of CPU and
// memory use on the node, 50..100, 75 for no change.
func balancedAllocation(pod *corev1.Pod, node *corev1.Node, running []*corev1.Pod) int64 {
	alloc := cpuAndMemory(node.Status.Allocatable)
	before := requested(running, false)
	want := podScoreRequests(pod, false)
	after := [2]int64{before[0] + want[0], before[1] + want[1]}
	return maxNodeScore/2 + (maxNodeScore/2+balance(after, alloc)-balance(before, alloc))/2
}

// balance is 100 × (1 − the standard deviation of the used fractions).
func balance(used, alloc [2]int64) int64 {
	var fractions []float64
	for i := range used {
		if alloc[i] == 0 {
			continue
		}
		fractions = append(fractions, math.Min(float64(used[i])/float64(alloc[i]), 1))
	}
	std := 0.0
	if len(fractions) == 2 {
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	}
	return int64((1 - std) * maxNodeScore)
}

// volumeUtilizationScore is VolumeBinding's score of one storage class
// with its default shape (StorageCapacityScoring, on in v1.37: 0 %
// used scores 100, 100 % scores 0, linear between): requested against
// capacity, in bytes.
func volumeUtilizationScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return maxNodeScore - requested*100/capacity
}
