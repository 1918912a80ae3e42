package loop

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// route is where the writes of one resource go: to every informer of it,
// except that a pod goes only to the informers whose field selector names
// its node (spec.nodeName=X, a kubelet's) if it is not X's. With a hundred
// kubelets, a pod's write would otherwise be offered to a hundred caches
// that never hold it.
type route struct {
	all    []*Informer            // every informer of the resource, in the order made
	byNode map[string][]*Informer // informers of pods on one node
	others []*Informer            // the informers not in byNode
}

func (l *Loop) addRoute(inf *Informer) {
	if l.routes == nil {
		l.routes = map[schema.GroupVersionResource]*route{}
	}
	r := l.routes[inf.gvr]
	if r == nil {
		r = &route{byNode: map[string][]*Informer{}}
		l.routes[inf.gvr] = r
	}
	inf.seq = len(r.all)
	r.all = append(r.all, inf)
	if node, ok := nodeSelected(inf); ok {
		r.byNode[node] = append(r.byNode[node], inf)
		return
	}
	r.others = append(r.others, inf)
}

// nodeSelected is the node a pod informer's field selector names, if that
// is all it selects on.
func nodeSelected(inf *Informer) (string, bool) {
	if inf.gvr.Group != "" || inf.gvr.Resource != "pods" {
		return "", false
	}
	reqs := inf.fields.Requirements()
	if len(reqs) != 1 || reqs[0].Field != "spec.nodeName" || reqs[0].Value == "" {
		return "", false
	}
	if op := reqs[0].Operator; op != selection.Equals && op != selection.DoubleEquals {
		return "", false
	}
	return reqs[0].Value, true
}

// informersFor are the informers that may hold obj or be told of it, in
// the order they were made. A pod's node never changes once set (the API
// server refuses it), and a pod has no node before it is bound, so the
// informers of other nodes neither hold it nor match it.
func (r *route) informersFor(obj runtime.Object) []*Informer {
	if r == nil {
		return nil
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || len(r.byNode) == 0 {
		return r.all
	}
	mine := r.byNode[pod.Spec.NodeName]
	if len(mine) == 0 {
		return r.others
	}
	out := append(slices.Clone(r.others), mine...)
	slices.SortFunc(out, func(a, b *Informer) int { return a.seq - b.seq })
	return out
}
