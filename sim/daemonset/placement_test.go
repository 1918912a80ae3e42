package daemonset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect}
}

func daemonSet(mutate func(*corev1.PodSpec)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "node-plugin", Namespace: "csi", UID: "ds-uid", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "plugin", Image: "plugin"}}}},
		},
	}
	if mutate != nil {
		mutate(&ds.Spec.Template.Spec)
	}
	return ds
}

// TestShouldRun is the placement table: taints × tolerations × node
// selectors × required node affinity.
func TestShouldRun(t *testing.T) {
	existsAll := func(s *corev1.PodSpec) { s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }
	zoneA := map[string]string{"zone": "a"}
	tests := []struct {
		name          string
		node          *corev1.Node
		spec          func(*corev1.PodSpec)
		run, keepGoes bool
	}{
		{"plain node", node("n", nil), nil, true, true},
		// A new node's not-ready taint is NoSchedule: only the Exists
		// toleration lets a pod on (the controller adds the NoExecute one).
		{"new node tainted not-ready NoSchedule", node("n", nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)), nil, false, true},
		{"new node, Exists toleration", node("n", nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)), existsAll, true, true},
		{"not-ready NoExecute is tolerated by the controller's toleration", node("n", nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), nil, true, true},
		{"unreachable NoExecute tolerated", node("n", nil, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), nil, true, true},
		{"unreachable NoSchedule not tolerated", node("n", nil, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule)), nil, false, true},
		{"disk pressure tolerated", node("n", nil, taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)), nil, true, true},
		{"memory pressure tolerated", node("n", nil, taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)), nil, true, true},
		{"pid pressure tolerated", node("n", nil, taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)), nil, true, true},
		{"cordoned tolerated", node("n", nil, taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), nil, true, true},
		{"network unavailable, pod network", node("n", nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), nil, false, true},
		{"network unavailable, host network", node("n", nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)),
			func(s *corev1.PodSpec) { s.HostNetwork = true }, true, true},
		{"control-plane taint", node("n", nil, taint("node-role.kubernetes.io/control-plane", corev1.TaintEffectNoSchedule)), nil, false, true},
		{"out-of-service NoExecute: neither", node("n", nil, taint(corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute)), nil, false, false},
		{"out-of-service, Exists toleration", node("n", nil, taint(corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute)), existsAll, true, true},
		{"own toleration of a custom taint", node("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule)),
			func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			}, true, true},
		{"nodeSelector matches", node("n", zoneA), func(s *corev1.PodSpec) { s.NodeSelector = zoneA }, true, true},
		{"nodeSelector misses", node("n", nil), func(s *corev1.PodSpec) { s.NodeSelector = zoneA }, false, false},
		{"nodeSelector misses, Exists toleration does not help", node("n", map[string]string{"zone": "b"}),
			func(s *corev1.PodSpec) { s.NodeSelector = zoneA; existsAll(s) }, false, false},
		{"required affinity matches", node("n", zoneA), func(s *corev1.PodSpec) { s.Affinity = zoneAffinity("a") }, true, true},
		{"required affinity misses", node("n", zoneA), func(s *corev1.PodSpec) { s.Affinity = zoneAffinity("b") }, false, false},
		{"template nodeName elsewhere", node("n", nil), func(s *corev1.PodSpec) { s.NodeName = "other" }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, keep := shouldRun(tt.node, daemonSet(tt.spec))
			if run != tt.run || keep != tt.keepGoes {
				t.Errorf("shouldRun = %v, %v; want %v, %v", run, keep, tt.run, tt.keepGoes)
			}
		})
	}
}

func zoneAffinity(zone string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
}

func TestAddDaemonTolerations(t *testing.T) {
	spec := corev1.PodSpec{HostNetwork: true, Tolerations: []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64)},
		{Key: "mine", Operator: corev1.TolerationOpEqual, Value: "x"},
	}}
	addDaemonTolerations(&spec)
	var keys []string
	for _, tol := range spec.Tolerations {
		keys = append(keys, tol.Key+":"+string(tol.Effect))
		if tol.Key == corev1.TaintNodeNotReady && tol.TolerationSeconds != nil {
			t.Error("the not-ready toleration kept its tolerationSeconds: the controller's replaces it")
		}
	}
	want := []string{"node.kubernetes.io/not-ready:NoExecute", "mine:", "node.kubernetes.io/unreachable:NoExecute",
		"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule",
		"node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule",
		"node.kubernetes.io/network-unavailable:NoSchedule"}
	if !slices.Equal(keys, want) {
		t.Errorf("tolerations %v, want %v", keys, want)
	}
	if len(daemonTolerations) != 6 {
		t.Errorf("the shared list grew to %d", len(daemonTolerations))
	}
}

func TestPinToNode(t *testing.T) {
	for _, a := range []*corev1.Affinity{nil, zoneAffinity("a"), {PodAffinity: &corev1.PodAffinity{}}} {
		got := pinToNode(a.DeepCopy(), "node-b")
		pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: got}}
		if n, err := targetNode(pod); err != nil || n != "node-b" {
			t.Errorf("targetNode = %q, %v; want node-b", n, err)
		}
		if a != nil && a.PodAffinity != nil && got.PodAffinity == nil {
			t.Error("the pod affinity was dropped")
		}
		terms := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || terms[0].MatchFields[0].Key != "metadata.name" {
			t.Errorf("terms %+v: want only matchFields metadata.name", terms)
		}
	}
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-c", Affinity: pinToNode(nil, "node-b")}}
	if n, _ := targetNode(bound); n != "node-c" {
		t.Errorf("a bound pod's node is its nodeName, got %q", n)
	}
	if _, err := targetNode(&corev1.Pod{}); err == nil {
		t.Error("a pod without affinity has no target node")
	}
}
