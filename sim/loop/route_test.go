package loop

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestRouteSendsPodsOnlyToTheirNodesInformers(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	l := &Loop{}
	mk := func(sel string) *Informer {
		inf := &Informer{gvr: pods, fields: fields.ParseSelectorOrDie(sel)}
		l.addRoute(inf)
		return inf
	}
	all := mk("")
	a := mk("spec.nodeName=node-a")
	b := mk("spec.nodeName==node-b")
	notOnlyNode := mk("spec.nodeName=node-a,metadata.name=x")
	a2 := mk("spec.nodeName=node-a")
	r := l.routes[pods]
	pod := func(node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	for _, tc := range []struct {
		node string
		want []*Informer
	}{
		{"node-a", []*Informer{all, a, notOnlyNode, a2}},
		{"node-b", []*Informer{all, b, notOnlyNode}},
		{"", []*Informer{all, notOnlyNode}},
		{"node-c", []*Informer{all, notOnlyNode}},
	} {
		got := r.informersFor(pod(tc.node))
		if len(got) != len(tc.want) {
			t.Errorf("pod on %q: %d informers, want %d", tc.node, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("pod on %q: informer %d is #%d, want #%d", tc.node, i, got[i].seq, tc.want[i].seq)
			}
		}
	}
	if got := r.informersFor(&corev1.PersistentVolume{}); len(got) != 5 {
		t.Errorf("a volume goes to %d informers, want all 5", len(got))
	}
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	all, own := &Informer{gvr: nodes, fields: fields.Everything()}, &Informer{gvr: nodes, fields: fields.ParseSelectorOrDie("metadata.name=node-a")}
	l.addRoute(all)
	l.addRoute(own)
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	if got := l.routes[nodes].informersFor(node("node-a")); len(got) != 2 {
		t.Errorf("node-a goes to %d informers, want 2", len(got))
	}
	if got := l.routes[nodes].informersFor(node("node-b")); len(got) != 1 || got[0] != all {
		t.Errorf("node-b goes to %d informers, want only the cluster-wide one", len(got))
	}
}
