package kubelet

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// handlerInformer is an informer whose writes the test hands to its
// handlers itself, synchronously, as the loop's informers do.
type handlerInformer struct {
	cache.SharedIndexInformer
	store    cache.Store
	handlers []cache.ResourceEventHandler
}

func newHandlerInformer() *handlerInformer {
	return &handlerInformer{store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
}

func (i *handlerInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handlers = append(i.handlers, h)
	return nil, nil
}

func (i *handlerInformer) GetStore() cache.Store { return i.store }

func (i *handlerInformer) add(obj any) {
	for _, h := range i.handlers {
		h.OnAdd(obj, false)
	}
}

func (i *handlerInformer) update(old, obj any) {
	for _, h := range i.handlers {
		h.OnUpdate(old, obj)
	}
}

func (i *handlerInformer) remove(obj any) {
	for _, h := range i.handlers {
		h.OnDelete(obj)
	}
}

func podUsing(name string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

// The Fanout hands a claim's write only to the kubelets whose own pod
// caches hold a pod that uses it, as those caches change (adds, updates
// that change the claims, deletes, a relist's tombstones), and to those
// that must see every claim; an attachment only to its node's kubelet.
func TestFanoutHandsWritesToTheKubeletsTheyConcern(t *testing.T) {
	f := NewFanout()
	claims, volumes, attachments := newHandlerInformer(), newHandlerInformer(), newHandlerInformer()
	k1, k2, k3 := &Kubelet{cfg: Config{NodeName: "node-1"}}, &Kubelet{cfg: Config{NodeName: "node-2"}}, &Kubelet{cfg: Config{NodeName: "node-3"}}
	pods1, pods2, pods3 := newHandlerInformer(), newHandlerInformer(), newHandlerInformer()
	f.join(k1, pods1, false, claims, volumes, attachments)
	f.join(k2, pods2, false, claims, volumes, attachments)
	f.join(k3, pods3, true, claims, volumes, attachments)
	if len(claims.handlers) != 1 || len(volumes.handlers) != 1 || len(attachments.handlers) != 1 {
		t.Fatalf("handlers on the shared informers: %d, %d, %d, want one each", len(claims.handlers), len(volumes.handlers), len(attachments.handlers))
	}
	name := func(ks []*Kubelet) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.cfg.NodeName)
		}
		return out
	}
	check := func(step, claim string, want ...string) {
		t.Helper()
		if got := name(f.usersOf(claim)); !slices.Equal(got, want) {
			t.Errorf("%s: claim %s goes to %v, want %v", step, claim, got, want)
		}
	}
	check("nothing cached", "default/a", "node-3")

	a := podUsing("p1", "a")
	pods2.add(podUsing("p2", "a"))
	pods1.add(a)
	check("a pod on node-1 and on node-2 use a", "default/a", "node-1", "node-2", "node-3")
	b := podUsing("p1", "b", "c")
	pods1.update(a, b)
	check("node-1's pod uses b and c instead", "default/a", "node-2", "node-3")
	check("node-1's pod uses b and c instead", "default/b", "node-1", "node-3")
	pods1.update(b, b)
	check("an update that changes no claim", "default/c", "node-1", "node-3")
	pods1.add(podUsing("p3", "c"))
	pods1.remove(cache.DeletedFinalStateUnknown{Key: "default/p1", Obj: b})
	check("node-1's first pod is gone (a relist's tombstone)", "default/b", "node-3")
	check("node-1's other pod still uses c", "default/c", "node-1", "node-3")
	if len(f.users["default/b"]) != 0 {
		t.Errorf("the index keeps %v for a claim no pod uses", f.users["default/b"])
	}

	if got := name(f.byNodeKubelets("node-2")); !slices.Equal(got, []string{"node-2"}) {
		t.Errorf("an attachment to node-2 goes to %v, want [node-2]", got)
	}
	if got := f.byNodeKubelets("node-9"); len(got) != 0 {
		t.Errorf("an attachment to a node with no kubelet goes to %v", name(got))
	}
}

// Each kubelet's informer factory hands out the one shared informer in a
// typed wrapper of its own: the Fanout must see one cache through them, or
// every kubelet but the first would get a Fanout of its own.
func TestFanoutSeesOneCacheThroughEachFactorysWrapper(t *testing.T) {
	client := fake.NewClientset()
	shared := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.PersistentVolumeClaim{}, 0, cache.Indexers{})
	other := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.PersistentVolumeClaim{}, 0, cache.Indexers{})
	claimsOf := func(inf cache.SharedIndexInformer) cache.SharedIndexInformer {
		f := informers.NewSharedInformerFactory(client, 0)
		f.InformerFor(&corev1.PersistentVolumeClaim{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return inf })
		return f.Core().V1().PersistentVolumeClaims().Informer()
	}
	a, b, c := claimsOf(shared), claimsOf(shared), claimsOf(other)
	f := NewFanout()
	f.join(&Kubelet{cfg: Config{NodeName: "node-1"}}, newHandlerInformer(), false, a, a, a)
	if !f.shares(b, b, b) {
		t.Errorf("two factories' wrappers of one informer are not seen as one cache")
	}
	if f.shares(c, c, c) {
		t.Errorf("another informer is seen as the same cache")
	}
}
