package scheduler

// What one scheduling attempt sees of the cluster, for the plugins that
// look across nodes (InterPodAffinity, PodTopologySpread) and for scoring.
//
// Why not the real plugins: k8s.io/kubernetes v1.37.2 is a dependency, and
// its interpodaffinity and podtopologyspread plugins could be called
// in-process, but they want a framework.Handle whose informer factory
// serves Namespaces, Services and ReplicationControllers (for namespace
// selectors and the system default spread constraints), kinds csisim's
// deterministic loop does not deliver to the scheduler; they fan each
// PreFilter and PreScore out to goroutines through the framework's
// Parallelizer, outside the loop; and their Filter and Score only make
// sense inside the framework's own runner (cycle state, nominated pods,
// preemption's RemovePod), which would replace this package's volume
// filters rather than sit beside them. So they are written here after the
// upstream plugins (pkg/scheduler/framework/plugins/...), one file each.

import (
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// snapshot is the scheduler cache's view for one attempt: every node, by
// name, and the pods bound to each that have not finished (terminating ones
// included, as in the real cache), and the pods assumed there: those
// waiting in PreBind for their claims, which the real scheduler's cache
// counts on their node from Reserve on.
type snapshot struct {
	nodes []*corev1.Node
	pods  map[string][]*corev1.Pod
}

// snapshot takes the scheduler's view of the cluster now.
func (s *Scheduler) snapshot() snapshot {
	nodes, _ := s.nodes.List(labels.Everything())
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	sn := snapshot{nodes: nodes, pods: map[string][]*corev1.Pod{}}
	for _, n := range nodes {
		sn.pods[n.Name] = s.runningOn(n.Name)
	}
	s.mu.Lock()
	assumed := make(map[string]string, len(s.binding))
	for key, b := range s.binding {
		assumed[key] = b.node
	}
	s.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(assumed)) {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		p, err := s.pods.Pods(ns).Get(name)
		node := assumed[key]
		if _, known := sn.pods[node]; err != nil || p.Spec.NodeName != "" || !known {
			continue
		}
		p = p.DeepCopy()
		p.Spec.NodeName = node
		sn.pods[node] = append(sn.pods[node], p)
	}
	return sn
}

// without is the snapshot with the pods in gone taken away, as preemption
// sees a node whose victims are gone.
func (sn snapshot) without(gone map[*corev1.Pod]bool) snapshot {
	if len(gone) == 0 {
		return sn
	}
	out := snapshot{nodes: sn.nodes, pods: make(map[string][]*corev1.Pod, len(sn.pods))}
	for node, pods := range sn.pods {
		for _, p := range pods {
			if !gone[p] {
				out.pods[node] = append(out.pods[node], p)
			}
		}
	}
	return out
}

// with is the snapshot with the pods in on as node's pods (the nominated
// pods the real framework filters a node with).
func (sn snapshot) with(node string, on []*corev1.Pod) snapshot {
	out := snapshot{nodes: sn.nodes, pods: make(map[string][]*corev1.Pod, len(sn.pods))}
	for n, pods := range sn.pods {
		out.pods[n] = pods
	}
	out.pods[node] = on
	return out
}

// topologyPair is a node label: a topology key and the node's value.
type topologyPair struct {
	key, value string
}

// namespaceLabels are the labels csisim knows a namespace has: the
// scheduler has no Namespace informer, so a namespace selector sees only
// kubernetes.io/metadata.name, which kube-apiserver sets on every
// namespace (labels a user adds to a namespace are not seen).
func namespaceLabels(ns string) labels.Set {
	return labels.Set{corev1.LabelMetadataName: ns}
}
