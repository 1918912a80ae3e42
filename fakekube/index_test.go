package fakekube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestGCIndexFollowsTheStore makes random writes of owners, dependents,
// finalizers, deletion policies and namespace deletions, and after each
// checks the collector's index against one built afresh from the store,
// and that every object a scan of the whole store would act on is among
// its candidates.
func TestGCIndexFollowsTheStore(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			srv := New(Options{Seed: seed})
			w := &randomWriter{t: t, s: srv.store, rand: rand.New(rand.NewPCG(seed, 7))}
			for i := 0; i < 300; i++ {
				op := w.step()
				w.s.mu.Lock()
				err := checkGCIndexLocked(w.s)
				w.s.mu.Unlock()
				if err != nil {
					t.Fatalf("after write %d (%s): %v", i, op, err)
				}
			}
		})
	}
}

// randomWriter makes random writes to ConfigMaps in a few namespaces.
type randomWriter struct {
	t    *testing.T
	s    *store
	rand *rand.Rand
	uids []types.UID // every UID handed out, stored or not
}

var randomNamespaces = []string{"default", "a", "b"}

func (w *randomWriter) res(resource string) *resource {
	return w.s.reg.byGVR[coreV1.WithResource(resource)]
}

func (w *randomWriter) pick(names []string) string { return names[w.rand.IntN(len(names))] }

func (w *randomWriter) step() string {
	ns, name := w.pick(randomNamespaces), fmt.Sprintf("cm-%d", w.rand.IntN(12))
	cms := w.res("configmaps")
	switch op := w.rand.IntN(10); {
	case op < 4:
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for range w.rand.IntN(3) {
			cm.OwnerReferences = append(cm.OwnerReferences, w.ownerRef())
		}
		if w.rand.IntN(3) == 0 {
			cm.Finalizers = []string{"example.com/hold"}
		}
		if obj, err := w.s.create(context.Background(), "test", "test", cms, ns, cm); err == nil {
			w.uids = append(w.uids, obj.(*corev1.ConfigMap).UID)
		} else if w.createNamespace(ns) {
			return "create namespace " + ns
		}
		return "create " + ns + "/" + name
	case op < 7:
		policy := w.pick([]string{"", "Orphan", "Foreground", "Background"})
		opts := metav1.DeleteOptions{}
		if policy != "" {
			opts.PropagationPolicy = ptrTo(metav1.DeletionPropagation(policy))
		}
		_, _ = w.s.delete("test", cms, ns, name, opts)
		return "delete " + policy + " " + ns + "/" + name
	case op < 9:
		_, _ = w.s.update(context.Background(), "test", "test", "patch", cms, ns, name, "", nil, func(cur runtime.Object) (runtime.Object, error) {
			cm := cur.(*corev1.ConfigMap)
			if w.rand.IntN(2) == 0 {
				cm.Finalizers = nil
			} else {
				cm.OwnerReferences = []metav1.OwnerReference{w.ownerRef()}
			}
			return cm, nil
		}, false)
		return "patch " + ns + "/" + name
	default:
		if ns == "default" {
			return "nothing"
		}
		_, _ = w.s.delete("test", w.res("namespaces"), "", ns, metav1.DeleteOptions{})
		return "delete namespace " + ns
	}
}

// createNamespace creates ns if it is not there (or has gone).
func (w *randomWriter) createNamespace(ns string) bool {
	_, err := w.s.create(context.Background(), "test", "test", w.res("namespaces"), "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	return err == nil
}

// ownerRef refers to a UID handed out before, or now and then to one that
// never was.
func (w *randomWriter) ownerRef() metav1.OwnerReference {
	uid := types.UID(fmt.Sprintf("never-%d", w.rand.IntN(3)))
	if len(w.uids) > 0 && w.rand.IntN(4) > 0 {
		uid = w.uids[w.rand.IntN(len(w.uids))]
	}
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: uid}
}

// checkGCIndexLocked compares the store's index with one built from
// scratch, and checks that whatever a full scan would act on is a candidate.
func checkGCIndexLocked(s *store) error {
	fresh := newGCIndex(s.reg)
	var all []objectRef
	for res, objs := range s.objects {
		for key, obj := range objs {
			ref := objectRef{res: res, key: key}
			all = append(all, ref)
			fresh.stored(ref, nil, obj)
		}
	}
	if err := sameSets("by UID", fresh.byUID, s.gc.byUID); err != nil {
		return err
	}
	if err := sameSetMaps("dependents", fresh.dependents, s.gc.dependents); err != nil {
		return err
	}
	if err := sameSetMaps("by namespace", fresh.byNamespace, s.gc.byNamespace); err != nil {
		return err
	}
	for _, ref := range all {
		if _, ok := s.gc.candidates[ref]; !ok && scanWouldAct(s, ref) {
			return fmt.Errorf("%s %s needs the collector but is not a candidate", ref.res.kind, ref.key)
		}
	}
	return nil
}

// scanWouldAct is whether a scan of every object, as the collector made
// before it had an index, would act on the object.
func scanWouldAct(s *store, ref objectRef) bool {
	obj := s.objects[ref.res][ref.key]
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil {
		if len(m.GetOwnerReferences()) == 0 {
			return false
		}
		for _, owner := range m.GetOwnerReferences() {
			if storedUID(s, owner.UID) {
				return false
			}
		}
		return true
	}
	if slices.Contains(m.GetFinalizers(), metav1.FinalizerOrphanDependents) {
		return true
	}
	if slices.Contains(m.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return true // acts unless all its dependents are being deleted; a candidate either way
	}
	_, isNamespace := obj.(*corev1.Namespace)
	return isNamespace
}

func storedUID(s *store, uid types.UID) bool {
	for _, objs := range s.objects {
		for _, obj := range objs {
			if m, _ := meta.Accessor(obj); m.GetUID() == uid {
				return true
			}
		}
	}
	return false
}

func sameSets[K comparable, V comparable](what string, want, got map[K]V) error {
	if len(want) != len(got) {
		return fmt.Errorf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			return fmt.Errorf("%s: %v is %v, want %v", what, k, got[k], v)
		}
	}
	return nil
}

func sameSetMaps[K comparable](what string, want, got map[K]refSet) error {
	if len(want) != len(got) {
		return fmt.Errorf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, set := range want {
		if err := sameSets(fmt.Sprintf("%s of %v", what, k), set, got[k]); err != nil {
			return err
		}
	}
	return nil
}
