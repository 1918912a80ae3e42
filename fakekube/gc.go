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
	ref objectRef
	obj runtime.Object
	m   metav1.Object
}

// lookupLocked finds a stored object, without copying: stored objects are
// never modified, only replaced.
func (s *store) lookupLocked(ref objectRef) (stored, bool) {
	obj, ok := s.objects[ref.res][ref.key]
	if !ok {
		return stored{}, false
	}
	m, _ := meta.Accessor(obj)
	return stored{ref: ref, obj: obj, m: m}, true
}

// sortedLocked looks up the objects of set, in the collector's order.
func (s *store) sortedLocked(set refSet) []stored {
	refs := s.gc.sorted(set)
	out := make([]stored, 0, len(refs))
	for _, ref := range refs {
		if o, ok := s.lookupLocked(ref); ok {
			out = append(out, o)
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

// collectOnceLocked acts on the first candidate, in the order of the
// registry's resources and then of keys, that has something to do, as a
// scan of every stored object in that order would. Candidates found to have
// nothing to do leave the set until a write puts them back.
func (s *store) collectOnceLocked() bool {
	for _, ref := range s.gc.sorted(s.gc.candidates) {
		o, ok := s.lookupLocked(ref)
		if !ok || !s.gc.needsCollector(o.obj) {
			delete(s.gc.candidates, ref)
			continue
		}
		if s.collectLocked(o) {
			return true
		}
	}
	return false
}

// collectLocked does the next thing the collector or the namespace
// controller would do for o, if anything, and says whether it did.
func (s *store) collectLocked(o stored) bool {
	// A dependent whose every owner is gone goes too.
	if refs := o.m.GetOwnerReferences(); len(refs) > 0 && o.m.GetDeletionTimestamp() == nil {
		if !s.gc.anyOwnerStored(refs) {
			_, _ = s.deleteLocked(garbageCollectorActor, o.ref.res, o.m.GetNamespace(), o.m.GetName(), metav1.DeleteOptions{})
			return true
		}
	}
	if o.m.GetDeletionTimestamp() == nil {
		return false
	}
	switch {
	case slices.Contains(o.m.GetFinalizers(), metav1.FinalizerOrphanDependents):
		for _, d := range s.sortedLocked(s.gc.dependents[o.m.GetUID()]) {
			s.dropOwnerLocked(d, o.m.GetUID())
		}
		s.removeFinalizerLocked(garbageCollectorActor, o, metav1.FinalizerOrphanDependents)
		return true
	case slices.Contains(o.m.GetFinalizers(), metav1.FinalizerDeleteDependents):
		deps := s.sortedLocked(s.gc.dependents[o.m.GetUID()])
		if len(deps) == 0 {
			s.removeFinalizerLocked(garbageCollectorActor, o, metav1.FinalizerDeleteDependents)
			return true
		}
		for _, d := range deps {
			if d.m.GetDeletionTimestamp() == nil {
				_, _ = s.deleteLocked(garbageCollectorActor, d.ref.res, d.m.GetNamespace(), d.m.GetName(),
					metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationForeground)})
				return true
			}
		}
	}
	if ns, ok := o.obj.(*corev1.Namespace); ok {
		return s.emptyNamespaceLocked(ns)
	}
	return false
}

// emptyNamespaceLocked deletes what is in a terminating namespace and
// removes the namespace once nothing is left in it.
func (s *store) emptyNamespaceLocked(ns *corev1.Namespace) bool {
	contents := s.sortedLocked(s.gc.byNamespace[ns.Name])
	changed, empty := false, len(contents) == 0
	for _, o := range contents {
		if o.m.GetDeletionTimestamp() == nil {
			_, _ = s.deleteLocked(namespaceControllerActor, o.ref.res, ns.Name, o.m.GetName(), metav1.DeleteOptions{})
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
	s.commitLocked(garbageCollectorActor, "patch", "", d.ref.res, d.obj, s.controllerManagerWriteLocked(d, next))
}

func (s *store) removeFinalizerLocked(actor string, o stored, finalizer string) {
	next := o.obj.DeepCopyObject()
	m, _ := meta.Accessor(next)
	m.SetFinalizers(slices.DeleteFunc(m.GetFinalizers(), func(f string) bool { return f == finalizer }))
	next = s.controllerManagerWriteLocked(o, next)
	s.commitLocked(actor, "patch", "", o.ref.res, o.obj, next)
	s.finishDeletionLocked(actor, o.ref.res, next)
}

// controllerManagerWriteLocked is next, o changed by the garbage
// collector or the namespace controller, with its managedFields as the
// field manager leaves them for their process's writes.
func (s *store) controllerManagerWriteLocked(o stored, next runtime.Object) runtime.Object {
	if out, err := s.recordUpdateLocked(o.ref.res, "", o.obj, next, controllerManagerFieldManager); err == nil {
		return out
	}
	return next
}

// controllerManagerFieldManager is the field manager of the garbage
// collector's and the namespace controller's writes: kube-controller-manager's
// user agent names the process first.
const controllerManagerFieldManager = "kube-controller-manager"

func ptrTo[T any](v T) *T { return &v }
