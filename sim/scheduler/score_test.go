package scheduler

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
)

func sized(n *corev1.Node, cpu, memory string) *corev1.Node {
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return n
}

func asking(p *corev1.Pod, requests corev1.ResourceList) *corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests}}}
	return p
}

func TestScorePlugins(t *testing.T) {
	nodes := zonedNodes("z1", "z2", "z3")
	prefer := func(t corev1.Taint) corev1.Taint { t.Effect = corev1.TaintEffectPreferNoSchedule; return t }
	tainted := zonedNodes("z1", "z2", "z3")
	tainted[1].Spec.Taints = []corev1.Taint{prefer(corev1.Taint{Key: "x"})}
	tainted[2].Spec.Taints = []corev1.Taint{prefer(corev1.Taint{Key: "x"}), prefer(corev1.Taint{Key: "y"})}
	tolerant := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "y", Operator: corev1.TolerationOpExists}}}}
	preferring := withAffinity(&corev1.Pod{}, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}},
			{Weight: 5, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}}}}},
		}}})
	db := func(name string) *corev1.Pod { return labelled(name, "default", map[string]string{"app": "db"}) }
	placed := snapshotOf(nodes, map[string][]*corev1.Pod{"node-a": {db("1"), db("2")}, "node-b": {db("3")}})
	soft := db("new")
	soft.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	avoiding := withAffinity(db("new"), &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: appTerm(corev1.LabelHostname)}}}})
	workload := labels.SelectorFromSet(labels.Set{"app": "db"})
	for _, tc := range []struct {
		name string
		got  map[string]int64
		want map[string]int64
	}{
		{"TaintToleration: untolerated PreferNoSchedule taints, fewer is better", taintScores(&corev1.Pod{}, tainted),
			map[string]int64{"node-a": 100, "node-b": 50, "node-c": 0}},
		{"TaintToleration: a tolerated one does not count", taintScores(tolerant, tainted),
			map[string]int64{"node-a": 100, "node-b": 0, "node-c": 0}},
		{"TaintToleration: no taints, all equal", taintScores(&corev1.Pod{}, nodes),
			map[string]int64{"node-a": 100, "node-b": 100, "node-c": 100}},
		{"NodeAffinity: the weights of the preferred terms matched", nodeAffinityScores(preferring, nodes),
			map[string]int64{"node-a": 100, "node-b": 50, "node-c": 0}},
		{"NodeAffinity: none preferred, skipped", nodeAffinityScores(&corev1.Pod{}, nodes), nil},
		{"PodTopologySpread: the pod's ScheduleAnyway constraint", spreadScores(soft, placed, nodes, nil),
			map[string]int64{"node-a": 0, "node-b": 33, "node-c": 100}},
		{"PodTopologySpread: the system defaults, by hostname and zone", spreadScores(db("new"), placed, nodes, workload),
			map[string]int64{"node-a": 50, "node-b": 75, "node-c": 100}},
		{"PodTopologySpread: no workload, no default constraints", spreadScores(db("new"), placed, nodes, labels.Set{}.AsSelector()), nil},
		{"InterPodAffinity: preferred anti-affinity", podAffinityScores(avoiding, placed, nodes),
			map[string]int64{"node-a": 0, "node-b": 50, "node-c": 100}},
		{"InterPodAffinity: nothing to score, skipped", podAffinityScores(&corev1.Pod{}, placed, nodes), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !maps.Equal(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestResourceScores(t *testing.T) {
	n := sized(node("n", nil), "2", "4Gi")
	half := asking(labelled("half", "default", nil), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")})
	cpuOnly := asking(labelled("cpu", "default", nil), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	memOnly := asking(labelled("mem", "default", nil), corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")})
	nothing := asking(labelled("none", "default", nil), nil)
	for _, tc := range []struct {
		name string
		got  int64
		want int64
	}{
		// 100m and 200Mi counted for a pod that asks for nothing.
		{"LeastAllocated: empty node", leastAllocated(nothing, n, nil), 95},
		{"LeastAllocated: half used", leastAllocated(nothing, n, []*corev1.Pod{half}), 45},
		{"LeastAllocated: a node with no allocatable", leastAllocated(nothing, node("bare", nil), nil), 0},
		// (1 − |0.5 − 0.5|/2) after, (1 − |0.5 − 0|/2) before: 50 + (50 + 100 − 75)/2.
		{"BalancedAllocation: the pod evens CPU and memory out", balancedAllocation(memOnly, n, []*corev1.Pod{cpuOnly}), 87},
		{"BalancedAllocation: the pod unbalances an empty node", balancedAllocation(memOnly, n, nil), 62},
		{"VolumeBinding: nothing used yet", volumeUtilizationScore(0, 10), 100},
		{"VolumeBinding: half", volumeUtilizationScore(5, 10), 50},
		{"VolumeBinding: more than there is", volumeUtilizationScore(11, 10), 0},
		{"VolumeBinding: no capacity", volumeUtilizationScore(1, 0), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if !bestEffort(nothing) || bestEffort(cpuOnly) {
		t.Error("bestEffort: a pod without requests is, one with a CPU request is not")
	}
}

func TestSelectNode(t *testing.T) {
	nodes := []*corev1.Node{sized(node("node-a", nil), "2", "4Gi"), sized(node("node-b", nil), "2", "4Gi"), sized(node("node-c", nil), "2", "4Gi")}
	busy := asking(labelled("busy", "default", nil), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	pod := labelled("new", "default", nil)
	for _, tc := range []struct {
		name   string
		placed map[string][]*corev1.Pod
		volume func(*corev1.Node) int64
		want   string
	}{
		{"all equal: the first by name", nil, nil, "node-a"},
		{"the least allocated", map[string][]*corev1.Pod{"node-a": {busy}, "node-b": {busy}}, nil, "node-c"},
		{"the volume score tips equals", nil, func(n *corev1.Node) int64 {
			if n.Name == "node-b" {
				return 60
			}
			return 20
		}, "node-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scoreInput{snapshot: snapshotOf(nodes, tc.placed), volumeScore: tc.volume}
			if got := selectNode(pod, nodes, in); got.Name != tc.want {
				t.Errorf("%s, want %s (totals %v)", got.Name, tc.want, totalScores(pod, nodes, in))
			}
		})
	}
	if got := selectNode(pod, nodes[2:], scoreInput{}); got.Name != "node-c" {
		t.Errorf("one feasible node: %s", got.Name)
	}
}

// TestVolumeScorer: VolumeBinding's score of a node, from the capacity
// published for it (the request against the first capacity that fits), or,
// where a static volume would be bound, from that volume's size.
func TestVolumeScorer(t *testing.T) {
	yes := true
	drivers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = drivers.Add(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example"}, Spec: storagev1.CSIDriverSpec{StorageCapacity: &yes}})
	capacities := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for name, c := range map[string]struct{ zone, size string }{"cap-1": {"z1", "2Gi"}, "cap-2": {"z2", "10Gi"}, "cap-0": {"z2", "512Mi"}} {
		q := resource.MustParse(c.size)
		_ = capacities.Add(&storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			StorageClassName: "fast", Capacity: &q,
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelTopologyZone: c.zone}}})
	}
	s := &Scheduler{drivers: storagelisters.NewCSIDriverLister(drivers), capacities: storagelisters.NewCSIStorageCapacityLister(capacities)}
	fast := "fast"
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &fast, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	vols := podVolumes{delayed: []*corev1.PersistentVolumeClaim{claim},
		classes: map[string]*storagev1.StorageClass{"fast": {ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example"}}}
	nodes := zonedNodes("z1", "z2", "z3")
	score := s.volumeScorer(vols)
	// z1: 1Gi of 2Gi; z2: 1Gi of 10Gi (the 512Mi one does not fit); z3: none published.
	for i, want := range []int64{50, 90, 0} {
		if got := score(nodes[i]); got != want {
			t.Errorf("%s: %d, want %d", nodes[i].Name, got, want)
		}
	}
	static := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-5g"}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName: "fast", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
	vols.available = []*corev1.PersistentVolume{static}
	if got := s.volumeScorer(vols)(nodes[2]); got != 80 {
		t.Errorf("a static 5Gi volume for a 1Gi claim: %d, want 80", got)
	}
	if s.volumeScorer(podVolumes{}) != nil {
		t.Error("a pod with no claim to bind is scored")
	}
}
