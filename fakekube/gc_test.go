package fakekube

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// gcEnv is a server whose writes are recorded one line each, so a test can
// compare the collector's writes, their order and their actors exactly.
type gcEnv struct {
	t      *testing.T
	ctx    context.Context
	cs     kubernetes.Interface
	writes []string
}

func newGCEnv(t *testing.T) *gcEnv {
	e := &gcEnv{t: t, ctx: context.Background()}
	srv := New(Options{Seed: 1, OnWrite: func(w Write) {
		line := fmt.Sprintf("%s %s %s %s/%s", w.Actor, w.Verb, w.Resource, w.Namespace, w.Name)
		if w.Removed {
			line += " (removed)"
		}
		e.writes = append(e.writes, line)
	}})
	e.cs = kubernetes.NewForConfigOrDie(srv.RESTConfig("test"))
	return e
}

// collectorWrites are the writes not made by the test itself or by the
// server setting itself up.
func (e *gcEnv) collectorWrites() []string {
	var out []string
	for _, w := range e.writes {
		if !strings.HasPrefix(w, "test ") && !strings.HasPrefix(w, "kube-apiserver ") {
			out = append(out, w)
		}
	}
	return out
}

func (e *gcEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *gcEnv) namespace(name string) {
	_, err := e.cs.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	e.must(err)
}

// configMap creates a ConfigMap owned by owners (UIDs of anything stored,
// or of nothing), held by finalizers.
func (e *gcEnv) configMap(ns, name string, owners []types.UID, finalizers ...string) types.UID {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers}}
	for i, uid := range owners {
		cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{
			APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprintf("owner-%d", i), UID: uid})
	}
	created, err := e.cs.CoreV1().ConfigMaps(ns).Create(e.ctx, cm, metav1.CreateOptions{})
	e.must(err)
	return created.UID
}

func (e *gcEnv) claim(ns, name string, owners []types.UID, finalizers ...string) {
	pvc := testPVC(name)
	pvc.Namespace, pvc.Finalizers = ns, finalizers
	for _, uid := range owners {
		pvc.OwnerReferences = append(pvc.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: uid})
	}
	_, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Create(e.ctx, pvc, metav1.CreateOptions{})
	e.must(err)
}

func (e *gcEnv) deleteConfigMap(ns, name string, policy metav1.DeletionPropagation) {
	opts := metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	e.must(e.cs.CoreV1().ConfigMaps(ns).Delete(e.ctx, name, opts))
}

// release removes every finalizer of a namespaced object.
func (e *gcEnv) release(resource, ns, name string) {
	e.t.Helper()
	e.must(e.cs.CoreV1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource(resource).Name(name).
		Body([]byte(`{"metadata":{"finalizers":null}}`)).Do(e.ctx).Error())
}

// TestCollectorWrites pins down what the garbage collector and the
// namespace controller write, in which order and as whom, for each way an
// owner or a namespace goes.
func TestCollectorWrites(t *testing.T) {
	const hold = "example.com/hold"
	tests := []struct {
		name string
		run  func(e *gcEnv)
		want []string
	}{{
		name: "dependents of a removed owner go, across kinds, once all their owners are gone",
		run: func(e *gcEnv) {
			owner := e.configMap("default", "owner", nil)
			other := e.configMap("default", "other", nil)
			e.configMap("default", "b-dep", []types.UID{owner})
			e.configMap("default", "a-dep", []types.UID{owner})
			e.configMap("default", "both", []types.UID{owner, other})
			e.claim("default", "claim", []types.UID{owner})
			node, err := e.cs.CoreV1().Nodes().Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
			e.must(err)
			_, err = e.cs.StorageV1().CSINodes().Create(e.ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: node.UID}}}}, metav1.CreateOptions{})
			e.must(err)
			e.deleteConfigMap("default", "owner", "")
			e.must(e.cs.CoreV1().Nodes().Delete(e.ctx, "n1", metav1.DeleteOptions{}))
			e.deleteConfigMap("default", "other", "")
		},
		want: []string{
			"generic-garbage-collector delete configmaps default/a-dep (removed)",
			"generic-garbage-collector delete configmaps default/b-dep (removed)",
			"generic-garbage-collector delete persistentvolumeclaims default/claim",
			"generic-garbage-collector delete csinodes /n1 (removed)",
			"generic-garbage-collector delete configmaps default/both (removed)",
		},
	}, {
		name: "a dependent created for an owner that is gone goes at the next collection",
		run: func(e *gcEnv) {
			e.configMap("default", "dangling", []types.UID{"no-such-uid"})
			e.configMap("default", "unrelated", nil)
			e.deleteConfigMap("default", "unrelated", "")
		},
		want: []string{
			"generic-garbage-collector delete configmaps default/dangling (removed)",
		},
	}, {
		name: "foreground deletion waits for held dependents, chains down and then lets the owner go",
		run: func(e *gcEnv) {
			owner := e.configMap("default", "owner", nil)
			e.configMap("default", "held", []types.UID{owner}, hold)
			mid := e.configMap("default", "mid", []types.UID{owner})
			e.configMap("default", "leaf", []types.UID{mid})
			e.deleteConfigMap("default", "owner", metav1.DeletePropagationForeground)
			e.release("configmaps", "default", "held")
		},
		want: []string{
			"generic-garbage-collector delete configmaps default/held",
			"generic-garbage-collector patch configmaps default/held",
			"generic-garbage-collector delete configmaps default/mid",
			"generic-garbage-collector delete configmaps default/leaf",
			"generic-garbage-collector patch configmaps default/leaf",
			"generic-garbage-collector delete configmaps default/leaf (removed)",
			"generic-garbage-collector patch configmaps default/mid",
			"generic-garbage-collector delete configmaps default/mid (removed)",
			// held goes when the test releases it; then the owner may go.
			"generic-garbage-collector patch configmaps default/owner",
			"generic-garbage-collector delete configmaps default/owner (removed)",
		},
	}, {
		name: "orphan deletion drops the owner from its dependents, then lets it go",
		run: func(e *gcEnv) {
			owner := e.configMap("default", "owner", nil)
			other := e.configMap("default", "other", nil)
			e.configMap("default", "z-dep", []types.UID{owner})
			e.configMap("default", "a-dep", []types.UID{owner, other})
			e.claim("default", "claim", []types.UID{owner})
			e.deleteConfigMap("default", "owner", metav1.DeletePropagationOrphan)
			e.deleteConfigMap("default", "other", "")
		},
		want: []string{
			"generic-garbage-collector patch configmaps default/a-dep",
			"generic-garbage-collector patch configmaps default/z-dep",
			"generic-garbage-collector patch persistentvolumeclaims default/claim",
			"generic-garbage-collector patch configmaps default/owner",
			"generic-garbage-collector delete configmaps default/owner (removed)",
			"generic-garbage-collector delete configmaps default/a-dep (removed)",
		},
	}, {
		name: "a terminating namespace is emptied, waits for finalizers, then goes",
		run: func(e *gcEnv) {
			e.namespace("doomed")
			e.configMap("doomed", "held", nil, hold)
			e.configMap("doomed", "plain", nil)
			e.claim("doomed", "claim", nil)
			e.must(e.cs.CoreV1().Namespaces().Delete(e.ctx, "doomed", metav1.DeleteOptions{}))
			e.release("configmaps", "doomed", "held")
			e.release("persistentvolumeclaims", "doomed", "claim")
		},
		want: []string{
			"namespace-controller delete configmaps doomed/held",
			"namespace-controller delete configmaps doomed/plain (removed)",
			"namespace-controller delete persistentvolumeclaims doomed/claim",
			"namespace-controller delete namespaces /doomed (removed)",
		},
	}, {
		name: "collector and namespace controller together: owners and dependents in a terminating namespace",
		run: func(e *gcEnv) {
			e.namespace("mixed")
			owner := e.configMap("mixed", "owner", nil)
			fg := e.configMap("mixed", "fg", nil)
			e.configMap("mixed", "dep", []types.UID{owner})
			e.configMap("mixed", "fg-dep", []types.UID{fg}, hold)
			e.deleteConfigMap("mixed", "fg", metav1.DeletePropagationForeground)
			e.must(e.cs.CoreV1().Namespaces().Delete(e.ctx, "mixed", metav1.DeleteOptions{}))
			e.release("configmaps", "mixed", "fg-dep")
		},
		want: []string{
			"generic-garbage-collector delete configmaps mixed/fg-dep",
			"generic-garbage-collector patch configmaps mixed/fg-dep",
			"namespace-controller delete configmaps mixed/dep (removed)",
			"namespace-controller delete configmaps mixed/owner (removed)",
			"generic-garbage-collector patch configmaps mixed/fg",
			"generic-garbage-collector delete configmaps mixed/fg (removed)",
			"namespace-controller delete namespaces /mixed (removed)",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newGCEnv(t)
			tt.run(e)
			got := e.collectorWrites()
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("collector writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
