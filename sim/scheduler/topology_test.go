package scheduler

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// zonedNodes are three nodes, one per zone, with their hostname labels.
func zonedNodes(zones ...string) []*corev1.Node {
	var out []*corev1.Node
	for i, z := range zones {
		name := "node-" + string(rune('a'+i))
		out = append(out, node(name, map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: z}))
	}
	return out
}

func labelled(name, ns string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
}

func appTerm(key string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: key}
}

func withAffinity(p *corev1.Pod, a *corev1.Affinity) *corev1.Pod {
	p.Spec.Affinity = a
	return p
}

func snapshotOf(nodes []*corev1.Node, placed map[string][]*corev1.Pod) snapshot {
	sn := snapshot{nodes: nodes, pods: map[string][]*corev1.Pod{}}
	for n, pods := range placed {
		sn.pods[n] = pods
	}
	return sn
}

func TestInterPodAffinityFilter(t *testing.T) {
	nodes := zonedNodes("z1", "z2", "z3")
	db := func(name string) *corev1.Pod { return labelled(name, "default", map[string]string{"app": "db"}) }
	anti := func(p *corev1.Pod, key string) *corev1.Pod {
		return withAffinity(p, &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{appTerm(key)}}})
	}
	affine := func(p *corev1.Pod, key string) *corev1.Pod {
		return withAffinity(p, &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{appTerm(key)}}})
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		placed map[string][]*corev1.Pod
		want   map[string]string // node → reason ("" fits)
		unres  bool              // the refusals are beyond preemption
	}{
		{"anti-affinity by zone keeps out of z1", anti(db("new"), corev1.LabelTopologyZone),
			map[string][]*corev1.Pod{"node-a": {db("old")}},
			map[string]string{"node-a": reasonPodAntiAffinity, "node-b": "", "node-c": ""}, false},
		{"anti-affinity of another namespace's pod does not count", anti(db("new"), corev1.LabelTopologyZone),
			map[string][]*corev1.Pod{"node-a": {labelled("old", "other", map[string]string{"app": "db"})}},
			map[string]string{"node-a": "", "node-b": "", "node-c": ""}, false},
		{"the placed pod's anti-affinity keeps the new one out", db("new"),
			map[string][]*corev1.Pod{"node-b": {anti(db("old"), corev1.LabelHostname)}},
			map[string]string{"node-a": "", "node-b": reasonExistingAntiAffinity, "node-c": ""}, false},
		{"affinity draws to the matching pod's zone", affine(labelled("web", "default", nil), corev1.LabelTopologyZone),
			map[string][]*corev1.Pod{"node-c": {db("old")}},
			map[string]string{"node-a": reasonPodAffinity, "node-b": reasonPodAffinity, "node-c": ""}, true},
		{"affinity with no match anywhere: refused unless the pod matches itself", affine(labelled("web", "default", nil), corev1.LabelTopologyZone),
			nil, map[string]string{"node-a": reasonPodAffinity, "node-b": reasonPodAffinity, "node-c": reasonPodAffinity}, true},
		{"the first of a self-affine group goes anywhere", affine(db("first"), corev1.LabelTopologyZone),
			nil, map[string]string{"node-a": "", "node-b": "", "node-c": ""}, false},
		{"affinity to a key no node has", affine(db("new"), "rack"),
			map[string][]*corev1.Pod{"node-a": {db("old")}},
			map[string]string{"node-a": reasonPodAffinity, "node-b": reasonPodAffinity, "node-c": reasonPodAffinity}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newPodAffinity(tc.pod, snapshotOf(nodes, tc.placed))
			for _, n := range nodes {
				v := st.filter(n)
				got := ""
				if !v.fits() {
					got = v.reasons[0]
					if v.preemptible == tc.unres {
						t.Errorf("%s: preemptible %v", n.Name, v.preemptible)
					}
				}
				if got != tc.want[n.Name] {
					t.Errorf("%s: %q, want %q", n.Name, got, tc.want[n.Name])
				}
			}
		})
	}
}

func TestPodTopologySpreadFilter(t *testing.T) {
	app := map[string]string{"app": "db"}
	spreadBy := func(key string, skew int32, edit func(*corev1.TopologySpreadConstraint)) *corev1.Pod {
		p := labelled("new", "default", app)
		c := corev1.TopologySpreadConstraint{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: app}}
		if edit != nil {
			edit(&c)
		}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
		return p
	}
	db := func(name string) *corev1.Pod { return labelled(name, "default", app) }
	tainted := zonedNodes("z1", "z2", "z3")
	tainted[2].Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		nodes  []*corev1.Node
		placed map[string][]*corev1.Pod
		want   map[string]string
	}{
		{"one per zone: only the empty zone", spreadBy(corev1.LabelTopologyZone, 1, nil), zonedNodes("z1", "z2", "z3"),
			map[string][]*corev1.Pod{"node-a": {db("a")}, "node-b": {db("b")}},
			map[string]string{"node-a": reasonSpreadConstraints, "node-b": reasonSpreadConstraints, "node-c": ""}},
		{"a pod being deleted does not count", spreadBy(corev1.LabelTopologyZone, 1, nil), zonedNodes("z1", "z2", "z3"),
			map[string][]*corev1.Pod{"node-a": {deleting(db("a"))}},
			map[string]string{"node-a": "", "node-b": "", "node-c": ""}},
		{"maxSkew 2 allows a second", spreadBy(corev1.LabelTopologyZone, 2, nil), zonedNodes("z1", "z2", "z3"),
			map[string][]*corev1.Pod{"node-a": {db("a")}},
			map[string]string{"node-a": "", "node-b": "", "node-c": ""}},
		{"a node without the key", spreadBy("rack", 1, nil), zonedNodes("z1", "z2", "z3"), nil,
			map[string]string{"node-a": reasonSpreadMissingKey, "node-b": reasonSpreadMissingKey, "node-c": reasonSpreadMissingKey}},
		{"minDomains above the domains there are: the least is 0",
			spreadBy(corev1.LabelTopologyZone, 1, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptrTo(int32(4)) }),
			zonedNodes("z1", "z2", "z3"),
			map[string][]*corev1.Pod{"node-a": {db("a")}, "node-b": {db("b")}, "node-c": {db("c")}},
			map[string]string{"node-a": reasonSpreadConstraints, "node-b": reasonSpreadConstraints, "node-c": reasonSpreadConstraints}},
		{"a tainted node's zone counts by default (nodeTaintsPolicy Ignore)", spreadBy(corev1.LabelTopologyZone, 1, nil), tainted,
			map[string][]*corev1.Pod{"node-a": {db("a")}, "node-b": {db("b")}},
			map[string]string{"node-a": reasonSpreadConstraints, "node-b": reasonSpreadConstraints, "node-c": ""}},
		{"nodeTaintsPolicy Honor leaves it out",
			spreadBy(corev1.LabelTopologyZone, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }), tainted,
			map[string][]*corev1.Pod{"node-a": {db("a")}},
			map[string]string{"node-a": reasonSpreadConstraints, "node-b": "", "node-c": ""}},
		{"nodeAffinityPolicy Honor (default) counts only the zones the pod may use",
			inZones(spreadBy(corev1.LabelTopologyZone, 1, nil), "z1", "z2"),
			zonedNodes("z1", "z2", "z3"), map[string][]*corev1.Pod{"node-a": {db("a")}, "node-b": {db("b")}},
			map[string]string{"node-a": "", "node-b": "", "node-c": ""}},
		{"nodeAffinityPolicy Ignore counts the empty zone it may not use",
			inZones(spreadBy(corev1.LabelTopologyZone, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &ignore }), "z1", "z2"),
			zonedNodes("z1", "z2", "z3"), map[string][]*corev1.Pod{"node-a": {db("a")}, "node-b": {db("b")}},
			map[string]string{"node-a": reasonSpreadConstraints, "node-b": reasonSpreadConstraints, "node-c": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSpread(tc.pod, snapshotOf(tc.nodes, tc.placed))
			for _, n := range tc.nodes {
				v := st.filter(n)
				got := ""
				if !v.fits() {
					got = v.reasons[0]
					if v.preemptible != (got == reasonSpreadConstraints) {
						t.Errorf("%s: preemptible %v for %q", n.Name, v.preemptible, got)
					}
				}
				if got != tc.want[n.Name] {
					t.Errorf("%s: %q, want %q", n.Name, got, tc.want[n.Name])
				}
			}
		})
	}
}

func deleting(p *corev1.Pod) *corev1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// inZones gives the pod a required node affinity for the zones.
func inZones(p *corev1.Pod, zones ...string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}}}}}
	return p
}

func ptrTo[T any](v T) *T { return &v }

// TestSnapshotCountsAssumedPods: a pod waiting in PreBind counts on the
// node chosen for it, as the real cache assumes it there; one whose node is
// gone does not.
func TestSnapshotCountsAssumedPods(t *testing.T) {
	nodes := zonedNodes("z1", "z2")
	placed := labelled("placed", "default", nil)
	placed.Spec.NodeName = "node-a"
	waiting, lost := labelled("waiting", "default", nil), labelled("lost", "default", nil)
	s := testScheduler(t, nodes, placed, waiting, lost)
	s.pods = corelisters.NewPodLister(s.podIndex)
	s.binding = map[string]preBinding{"default/waiting": {node: "node-b"}, "default/lost": {node: "node-z"}}
	sn := s.snapshot()
	if got := names(sn.pods["node-a"]); got != "placed" {
		t.Errorf("node-a: %s", got)
	}
	if got := names(sn.pods["node-b"]); got != "waiting" || sn.pods["node-b"][0].Spec.NodeName != "node-b" {
		t.Errorf("node-b: %s", got)
	}
	if waiting.Spec.NodeName != "" {
		t.Error("the cached pod was changed")
	}
	if _, ok := sn.pods["node-z"]; ok {
		t.Error("a pod assumed on a node that is gone was counted")
	}
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

// TestDefaultSelector: the system default spread selects the pods of the
// StatefulSet or ReplicaSet that controls the pod, and nothing for a pod
// without one.
func TestDefaultSelector(t *testing.T) {
	ssIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	rsIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = ssIdx.Add(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})
	_ = rsIdx.Add(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "1"}}}})
	s := &Scheduler{statefulSets: appslisters.NewStatefulSetLister(ssIdx), replicaSets: appslisters.NewReplicaSetLister(rsIdx)}
	owned := func(kind, name string) *corev1.Pod {
		p := labelled("p", "default", nil)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptrTo(true)}}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"a StatefulSet's pod", owned("StatefulSet", "db"), "app=db"},
		{"a ReplicaSet's pod", owned("ReplicaSet", "web-1"), "app=web,pod-template-hash=1"},
		{"an owner that is gone", owned("StatefulSet", "gone"), ""},
		{"no owner", labelled("p", "default", nil), ""},
	} {
		if got := s.defaultSelector(tc.pod).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPreemptionAcrossNodes: a pod kept off a node by its anti-affinity to
// a pod of lower priority there may preempt it; to one of equal priority,
// it may not.
func TestPreemptionAcrossNodes(t *testing.T) {
	nodes := zonedNodes("z1")
	low, high := int32(0), int32(100)
	old := labelled("old", "default", map[string]string{"app": "db"})
	old.Spec.NodeName, old.Spec.Priority = "node-a", &low
	pod := withAffinity(labelled("new", "default", nil), &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{appTerm(corev1.LabelHostname)}}})
	s := testScheduler(t, nodes, old)
	pod.Spec.Priority = &high
	if victims, ok := s.victimsOn(pod, nodes[0], podVolumes{}); !ok || names(victims) != "old" {
		t.Errorf("higher priority: victims %q, %v", names(victims), ok)
	}
	pod.Spec.Priority = &low
	if victims, ok := s.victimsOn(pod, nodes[0], podVolumes{}); ok {
		t.Errorf("equal priority: victims %q", names(victims))
	}
}
