package kubelet

// One handler registration per shared informer for all the simulated
// kubelets of a cluster. The simulated kubelets share one cache of claims,
// volumes and attachments (sim/cluster/clients.go); with a handler each,
// every claim, volume or attachment write called a hundred handlers on a
// hundred nodes, each looking the claim up in its own pod index to find
// nothing. The Fanout registers once and hands a write only to the kubelets
// it concerns: a claim or a volume to those whose pods use the claim (an
// index kept from each kubelet's own pod informer, so it holds exactly what
// that kubelet's cache holds), an attachment to the kubelet of its node.
// Each kubelet then does what its own handler did (wake.go), so the keys
// queued, and a run's trace, are the same.

import (
	"reflect"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/sim/volumeutil"
)

// Fanout hands the shared informers' writes to the kubelets they concern.
// Make one per simulated cluster (NewFanout) and give it to every kubelet
// in Config.Fanout; all of them must share its claim, volume and
// attachment informers (a kubelet with other informers gets a Fanout of
// its own). Only for informers that deliver synchronously, in write order,
// as the loop's do (sim/loop): the users index must be up to date when a
// claim's write is handed out.
type Fanout struct {
	mu sync.Mutex
	// The informers the handlers are registered on, nil until the first
	// kubelet joins.
	claims, volumes, attachments cache.SharedIndexInformer
	// members are the kubelets in the order they joined; a kubelet is
	// named by its position here.
	members []*Kubelet
	byNode  map[string][]int
	// users: claim "namespace/name" -> member -> how many of its cached
	// pods use the claim.
	users map[string]map[int]int
	// always: members every claim and volume is handed to, which then
	// look in their own pod index as their own handler did: those whose
	// pod cache has no PodsByClaim index (enqueuePendingUsing falls back to
	// all waiting pods), and those of a Fanout of their own (see join).
	always []int
}

// podsByClaim is the index the kubelets' pod caches keep (New).
var podsByClaim = volumeutil.IndexFunc(volumeutil.PodsByClaim)

// NewFanout makes an empty Fanout.
func NewFanout() *Fanout {
	return &Fanout{byNode: map[string][]int{}, users: map[string]map[int]int{}}
}

// shares reports whether f may take a kubelet with these informers.
func (f *Fanout) shares(claims, volumes, attachments cache.SharedIndexInformer) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claims == nil || (sameCache(f.claims, claims) && sameCache(f.volumes, volumes) && sameCache(f.attachments, attachments))
}

// sameCache reports whether two informers hold one cache: an informer
// factory hands out the loop's informer in a typed wrapper of its own
// (client-go's typedSharedIndexInformer), a different value for each
// kubelet's factory, around the one cache.
func sameCache(a, b cache.SharedIndexInformer) bool {
	ia, ib := a.GetIndexer(), b.GetIndexer()
	if ia == nil || ib == nil || !reflect.TypeOf(ia).Comparable() || reflect.TypeOf(ia) != reflect.TypeOf(ib) {
		return false
	}
	return ia == ib
}

// join adds k. pods is k's own pod informer, whose writes keep the users
// index; always: hand k every claim and volume (its pod cache has no
// PodsByClaim index, or its informers are client-go's, whose handlers run
// on goroutines of their own: a claim's handler could run before the pod
// handler that keeps the index, where k's own index is up to date).
func (f *Fanout) join(k *Kubelet, pods cache.SharedIndexInformer, always bool, claims, volumes, attachments cache.SharedIndexInformer) {
	f.mu.Lock()
	first := f.claims == nil
	if first {
		f.claims, f.volumes, f.attachments = claims, volumes, attachments
	}
	f.mu.Unlock()
	if first {
		// Registered before any member: the objects already cached, which
		// AddEventHandler hands to a new handler, reach nobody here; a
		// kubelet that joins is told of them by addWakeHandlers, once.
		on := func(inf cache.SharedIndexInformer, wake func(obj any)) {
			_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    wake,
				UpdateFunc: func(_, obj any) { wake(obj) },
			})
		}
		on(claims, f.wakeClaim)
		on(volumes, f.wakeVolume)
		on(attachments, f.wakeAttachment)
	}
	f.mu.Lock()
	m := len(f.members)
	f.members = append(f.members, k)
	f.byNode[k.cfg.NodeName] = append(f.byNode[k.cfg.NodeName], m)
	if always {
		f.always = append(f.always, m)
	}
	f.mu.Unlock()
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.count(m, obj, 1) },
		UpdateFunc: func(old, cur any) { f.count(m, old, -1); f.count(m, cur, 1) },
		DeleteFunc: func(obj any) { f.count(m, obj, -1) },
	})
}

// count adds n for each claim the pod uses to member m's users.
func (f *Fanout) count(m int, obj any, n int) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	claims, _ := podsByClaim(pod)
	for _, claim := range claims {
		u := f.users[claim]
		if u == nil {
			u = map[int]int{}
			f.users[claim] = u
		}
		u[m] += n
		if u[m] <= 0 {
			delete(u, m)
		}
		if len(u) == 0 {
			delete(f.users, claim)
		}
	}
}

// usersOf are the members whose pods use the claim, and those always
// handed every claim, in the order they joined.
func (f *Fanout) usersOf(claim string) []*Kubelet {
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := slices.Clone(f.always)
	for m := range f.users[claim] {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	ms = slices.Compact(ms)
	out := make([]*Kubelet, len(ms))
	for i, m := range ms {
		out[i] = f.members[m]
	}
	return out
}

func (f *Fanout) wakeClaim(obj any) {
	if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		for _, k := range f.usersOf(c.Namespace + "/" + c.Name) {
			k.wakeClaim(c)
		}
	}
}

func (f *Fanout) wakeVolume(obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || pv.Spec.ClaimRef == nil {
		return
	}
	for _, k := range f.usersOf(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name) {
		k.enqueuePendingOfVolume(pv)
	}
}

func (f *Fanout) wakeAttachment(obj any) {
	if va, ok := obj.(*storagev1.VolumeAttachment); ok {
		for _, k := range f.byNodeKubelets(va.Spec.NodeName) {
			k.wakeAttachment(va)
		}
	}
}

// byNodeKubelets are the node's kubelets (one, unless a test makes more).
func (f *Fanout) byNodeKubelets(node string) []*Kubelet {
	f.mu.Lock()
	defer f.mu.Unlock()
	ms := f.byNode[node]
	ks := make([]*Kubelet, len(ms))
	for i, m := range ms {
		ks[i] = f.members[m]
	}
	return ks
}

// replay tells a kubelet that joins of the objects already cached, in the
// order its own handlers, registered then, would have been told
// (AddEventHandler's initial adds, sorted by key).
func replay(inf cache.SharedIndexInformer, wake func(obj any)) {
	keys := inf.GetStore().ListKeys()
	slices.Sort(keys)
	for _, key := range keys {
		if obj, ok, _ := inf.GetStore().GetByKey(key); ok {
			wake(obj)
		}
	}
}
