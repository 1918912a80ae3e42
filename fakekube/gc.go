//lint:file-ignore SA1019 clients still send the deprecated orphanDependents, and the real API server honours it

package fakekube

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The components of kube-controller-manager whose work on deletion the
// store does itself, right after each write, so that a run stays
// deterministic: the garbage collector (owner references and the
// foregroundDeletion and orphan finalizers) and the namespace controller.
const (
	garbageCollectorActor    = "generic-garbage-collector"
	namespaceControllerActor = "namespace-controller"
)

// propagationPolicy is the policy a deletion asks for; Background when it
// asks for none, as for every kind served here.
func propagationPolicy(opts metav1.DeleteOptions) (metav1.DeletionPropagation, error) {
	if opts.OrphanDependents != nil && opts.PropagationPolicy != nil {
		return "", apierrors.NewBadRequest("orphanDependents and propagationPolicy cannot be both set")
	}
	if opts.OrphanDependents != nil {
		if *opts.OrphanDependents {
			return metav1.DeletePropagationOrphan, nil
		}
		return metav1.DeletePropagationBackground, nil
	}
	if opts.PropagationPolicy == nil {
		return metav1.DeletePropagationBackground, nil
	}
	switch p := *opts.PropagationPolicy; p {
	case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		return p, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf(`propagationPolicy: Unsupported value: %q: supported values: "Foreground", "Background", "Orphan"`, p))
	}
}

func addFinalizerTo(m metav1.Object, f string) {
	if !slices.Contains(m.GetFinalizers(), f) {
		m.SetFinalizers(append(m.GetFinalizers(), f))
	}
}

// stored is one object with the resource it belongs to.
type stored struct {
	res *resource
	obj runtime.Object
	m   metav1.Object
}

// allLocked lists every stored object, in a stable order, without copying:
// stored objects are never modified, only replaced.
func (s *store) allLocked() []stored {
	var out []stored
	for _, res := range s.reg.all {
		keys := make([]string, 0, len(s.objects[res]))
		for k := range s.objects[res] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			obj := s.objects[res][k]
			m, _ := meta.Accessor(obj)
			out = append(out, stored{res: res, obj: obj, m: m})
		}
	}
	return out
}

// collectGarbageLocked does, until nothing changes, what the garbage
// collector and the namespace controller would do next:
//   - dependents whose owners are all gone are deleted (background);
//   - an owner deleted in the foreground has its dependents deleted, and
//     loses the foregroundDeletion finalizer once they are gone;
//   - an owner deleted with orphan propagation has its owner references
//     removed from its dependents, then loses the orphan finalizer;
//   - a terminating namespace has its contents deleted and goes when empty.
func (s *store) collectGarbageLocked() {
	// Only a removal or a write to an object being deleted can give the
	// collector work; most writes are neither, and skip the scan.
	if !s.gcPending {
		return
	}
	s.gcPending = false
	// Each pass acts once and starts over on fresh state, so no action is
	// based on an object another action of the same pass has changed.
	for s.collectOnceLocked() {
	}
	s.gcPending = false
}

func (s *store) collectOnceLocked() bool {
	all := s.allLocked()
	live := map[types.UID]stored{}
	for _, o := range all {
		live[o.m.GetUID()] = o
	}
	dependents := map[types.UID][]stored{}
	for _, o := range all {
		for _, ref := range o.m.GetOwnerReferences() {
			dependents[ref.UID] = append(dependents[ref.UID], o)
		}
	}
	for _, o := range all {
		// A dependent whose every owner is gone goes too.
		if refs := o.m.GetOwnerReferences(); len(refs) > 0 && o.m.GetDeletionTimestamp() == nil {
			orphaned := true
			for _, ref := range refs {
				if _, ok := live[ref.UID]; ok {
					orphaned = false
				}
			}
			if orphaned {
				_, _ = s.deleteLocked(garbageCollectorActor, o.res, o.m.GetNamespace(), o.m.GetName(), metav1.DeleteOptions{})
				return true
			}
		}
		if o.m.GetDeletionTimestamp() == nil {
			continue
		}
		switch {
		case slices.Contains(o.m.GetFinalizers(), metav1.FinalizerOrphanDependents):
			for _, d := range dependents[o.m.GetUID()] {
				s.dropOwnerLocked(d, o.m.GetUID())
			}
			s.removeFinalizerLocked(garbageCollectorActor, o, metav1.FinalizerOrphanDependents)
			return true
		case slices.Contains(o.m.GetFinalizers(), metav1.FinalizerDeleteDependents):
			deps := dependents[o.m.GetUID()]
			if len(deps) == 0 {
				s.removeFinalizerLocked(garbageCollectorActor, o, metav1.FinalizerDeleteDependents)
				return true
			}
			for _, d := range deps {
				if d.m.GetDeletionTimestamp() == nil {
					_, _ = s.deleteLocked(garbageCollectorActor, d.res, d.m.GetNamespace(), d.m.GetName(),
						metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)})
					return true
				}
			}
		}
		if ns, ok := o.obj.(*corev1.Namespace); ok && s.emptyNamespaceLocked(ns, all) {
			return true
		}
	}
	return false
}

// emptyNamespaceLocked deletes what is in a terminating namespace and
// removes the namespace once nothing is left in it.
func (s *store) emptyNamespaceLocked(ns *corev1.Namespace, all []stored) bool {
	changed, empty := false, true
	for _, o := range all {
		if !o.res.namespaced || o.m.GetNamespace() != ns.Name {
			continue
		}
		empty = false
		if o.m.GetDeletionTimestamp() == nil {
			_, _ = s.deleteLocked(namespaceControllerActor, o.res, ns.Name, o.m.GetName(), metav1.DeleteOptions{})
			changed = true
		}
	}
	if empty && len(ns.Finalizers) == 0 {
		nsRes := s.reg.byGVR[coreV1.WithResource("namespaces")]
		s.removeLocked(namespaceControllerActor, nsRes, ns)
		changed = true
	}
	return changed
}

func (s *store) dropOwnerLocked(d stored, owner types.UID) {
	next := d.obj.DeepCopyObject()
	m, _ := meta.Accessor(next)
	m.SetOwnerReferences(slices.DeleteFunc(m.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner }))
	s.commitLocked(garbageCollectorActor, "patch", "", d.res, d.obj, next)
}

func (s *store) removeFinalizerLocked(actor string, o stored, finalizer string) {
	next := o.obj.DeepCopyObject()
	m, _ := meta.Accessor(next)
	m.SetFinalizers(slices.DeleteFunc(m.GetFinalizers(), func(f string) bool { return f == finalizer }))
	s.commitLocked(actor, "patch", "", o.res, o.obj, next)
	s.finishDeletionLocked(actor, o.res, next)
}

func ptrTo[T any](v T) *T { return &v }
