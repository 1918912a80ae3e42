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
// its node (spec.nodeName=X, a kubelet's) if it is X's, and a Node only to
// the informers that select it by name (metadata.name=X, a kubelet's own
// Node) if it is X. With a hundred kubelets, a write would otherwise be
// offered to a hundred caches that never hold it.
type route struct {
	all    []*Informer            // every informer of the resource, in the order made
	byNode map[string][]*Informer // informers of one node's pods, or of one Node
	others []*Informer            // the informers not in byNode
	made   int                    // informers made so far: the next one's seq, counting past removed ones so that seqs keep the order made
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
	inf.seq = r.made
	r.made++
	r.all = append(r.all, inf)
	if node, ok := nodeSelected(inf); ok {
		r.byNode[node] = append(r.byNode[node], inf)
		return
	}
	r.others = append(r.others, inf)
}

// nodeField is the field that names an object's node, for the kinds that
// have one that never changes once set.
func nodeField(gvr schema.GroupVersionResource) string {
	switch {
	case gvr.Group != "":
		return ""
	case gvr.Resource == "pods":
		return "spec.nodeName"
	case gvr.Resource == "nodes":
		return "metadata.name"
	}
	return ""
}

// nodeSelected is the node an informer's field selector names, if that is
// all it selects on.
func nodeSelected(inf *Informer) (string, bool) {
	field := nodeField(inf.gvr)
	if field == "" {
		return "", false
	}
	reqs := inf.fields.Requirements()
	if len(reqs) != 1 || reqs[0].Field != field || reqs[0].Value == "" {
		return "", false
	}
	if op := reqs[0].Operator; op != selection.Equals && op != selection.DoubleEquals {
		return "", false
	}
	return reqs[0].Value, true
}

// nodeOf is the node a pod is bound to, or a Node's name.
func nodeOf(obj runtime.Object) (string, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.Spec.NodeName, true
	case *corev1.Node:
		return o.Name, true
	}
	return "", false
}

// informersFor are the informers that may hold obj or be told of it, in
// the order they were made. A pod's node never changes once set (the API
// server refuses it), a pod has no node before it is bound, and a name
// never changes: the informers of other nodes neither hold obj nor match
// it.
func (r *route) informersFor(obj runtime.Object) []*Informer {
	if r == nil {
		return nil
	}
	if len(r.byNode) == 0 {
		return r.all
	}
	node, ok := nodeOf(obj)
	if !ok {
		return r.all
	}
	mine := r.byNode[node]
	if len(mine) == 0 {
		return r.others
	}
	out := append(slices.Clone(r.others), mine...)
	slices.SortFunc(out, func(a, b *Informer) int { return a.seq - b.seq })
	return out
}

// remove takes component's informers out of the route.
func (r *route) remove(component string) {
	mine := func(inf *Informer) bool { return inf.component == component }
	r.all = slices.DeleteFunc(r.all, mine)
	r.others = slices.DeleteFunc(r.others, mine)
	for node, infs := range r.byNode {
		if infs = slices.DeleteFunc(infs, mine); len(infs) == 0 {
			delete(r.byNode, node)
		} else {
			r.byNode[node] = infs
		}
	}
}
