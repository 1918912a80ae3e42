package realcluster

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// watchedKind is one kind whose writes go into the timeline.
type watchedKind struct {
	kind, resource string
	informer       func(informers.SharedInformerFactory) cache.SharedIndexInformer
}

// watchedKinds are the kinds the volume lifecycle touches; Leases (the
// kubelets' heartbeats) are not among them.
var watchedKinds = []watchedKind{
	{"PersistentVolumeClaim", "persistentvolumeclaims", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().PersistentVolumeClaims().Informer()
	}},
	{"PersistentVolume", "persistentvolumes", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().PersistentVolumes().Informer()
	}},
	{"Pod", "pods", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	}},
	{"VolumeAttachment", "volumeattachments", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Storage().V1().VolumeAttachments().Informer()
	}},
	{"Node", "nodes", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Nodes().Informer()
	}},
	{"CSINode", "csinodes", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Storage().V1().CSINodes().Informer()
	}},
	{"Event", "events", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Events().Informer()
	}},
	{"StorageClass", "storageclasses", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Storage().V1().StorageClasses().Informer()
	}},
	{"CSIDriver", "csidrivers", func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Storage().V1().CSIDrivers().Informer()
	}},
}

type observedType int

const (
	observedAdded observedType = iota
	observedUpdated
	observedDeleted
)

// observed is one watch event on its way into the timeline.
type observed struct {
	typ                 observedType
	kind, resource      string
	namespace, name, rv string
	old, obj            runtime.Object // old only for updates
	bound               bool           // an update that set a pod's node
	deleting            bool           // an update that set the deletionTimestamp
	order               uint64         // resourceVersion as a number, for ordering
	arrived             time.Time
}

// writeRecorder turns the watch events of the watched kinds into timeline
// entries, in resourceVersion order, each attributed to its writer.
type writeRecorder struct {
	rec   *trace.Recorder
	audit *auditIndex // nil: attribution from managedFields alone
	// auditWait bounds how long an event waits for its audit record.
	auditWait time.Duration
	// reorder is how long an event is held back for events of other
	// kinds with lower resourceVersions, which arrive on other watches.
	reorder time.Duration

	mu      sync.Mutex
	queue   []*observed
	wake    chan struct{}
	drained chan struct{} // closed once run has returned
}

func newWriteRecorder(rec *trace.Recorder, audit *auditIndex) *writeRecorder {
	return &writeRecorder{rec: rec, audit: audit, auditWait: time.Second, reorder: 15 * time.Millisecond,
		wake: make(chan struct{}, 1), drained: make(chan struct{})}
}

// start watches every kind with its own informers and records until ctx
// ends; then it records what is still queued and closes drained. It returns
// once the informers have listed what existed before, which the timeline
// leaves out.
func (w *writeRecorder) start(ctx context.Context, cs kubernetes.Interface) bool {
	f := informers.NewSharedInformerFactory(cs, 0)
	var synced []cache.InformerSynced
	for _, k := range watchedKinds {
		inf := k.informer(f)
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					w.push(newObserved(observedAdded, k, nil, obj))
				}
			},
			UpdateFunc: func(old, obj any) {
				if o := newObserved(observedUpdated, k, old, obj); o != nil && !unremarkable(o) {
					w.push(o)
				}
			},
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				w.push(newObserved(observedDeleted, k, nil, obj))
			},
		})
		synced = append(synced, inf.HasSynced)
	}
	f.Start(ctx.Done())
	go func() {
		w.run(ctx)
		f.Shutdown()
		close(w.drained)
	}()
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

func newObserved(typ observedType, k watchedKind, old, obj any) *observed {
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	ob := &observed{typ: typ, kind: k.kind, resource: k.resource, namespace: m.GetNamespace(), name: m.GetName(),
		rv: m.GetResourceVersion(), obj: o, arrived: time.Now()}
	ob.order, _ = strconv.ParseUint(ob.rv, 10, 64)
	if typ == observedUpdated {
		prev, ok := old.(runtime.Object)
		if !ok {
			return nil
		}
		pm, err := meta.Accessor(prev)
		if err != nil {
			return nil
		}
		ob.old = prev
		ob.deleting = pm.GetDeletionTimestamp() == nil && m.GetDeletionTimestamp() != nil
		if p, ok := o.(*corev1.Pod); ok {
			ob.bound = prev.(*corev1.Pod).Spec.NodeName == "" && p.Spec.NodeName != ""
		}
	}
	return ob
}

// unremarkable reports updates the timeline leaves out: a resync that
// changed nothing, and a Node update that changed neither its metadata nor
// its spec nor the volumes attached to it and in use (heartbeats, resource
// and condition updates), as the simulator's kubelet posts none.
func unremarkable(o *observed) bool {
	if om, err := meta.Accessor(o.old); err == nil && om.GetResourceVersion() == o.rv {
		return true
	}
	n, ok := o.obj.(*corev1.Node)
	if !ok {
		return false
	}
	old := o.old.(*corev1.Node)
	return sameMeta(&old.ObjectMeta, &n.ObjectMeta) && apiequality.Semantic.DeepEqual(old.Spec, n.Spec) &&
		apiequality.Semantic.DeepEqual(old.Status.VolumesInUse, n.Status.VolumesInUse) &&
		apiequality.Semantic.DeepEqual(old.Status.VolumesAttached, n.Status.VolumesAttached)
}

// sameMeta compares what of an object's metadata a person would call a
// change (not its resourceVersion or managedFields).
func sameMeta(a, b *metav1.ObjectMeta) bool {
	return apiequality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		apiequality.Semantic.DeepEqual(a.Annotations, b.Annotations) &&
		slices.Equal(a.Finalizers, b.Finalizers) &&
		apiequality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		(a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil)
}

func (w *writeRecorder) push(o *observed) {
	if o == nil {
		return
	}
	w.mu.Lock()
	w.queue = append(w.queue, o)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the queued event with the lowest resourceVersion once it has
// been held back long enough; ok is false if there is none yet, and wait
// says how long until there may be.
func (w *writeRecorder) next(now time.Time, hold bool) (o *observed, wait time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil, time.Hour, false
	}
	i := 0
	for j, q := range w.queue {
		if q.order < w.queue[i].order {
			i = j
		}
	}
	if due := w.queue[i].arrived.Add(w.reorder); hold && now.Before(due) {
		return nil, due.Sub(now), false
	}
	o = w.queue[i]
	w.queue = slices.Delete(w.queue, i, i+1)
	return o, 0, true
}

func (w *writeRecorder) run(ctx context.Context) {
	for {
		o, wait, ok := w.next(time.Now(), ctx.Err() == nil)
		if ok {
			w.rec.Add(cluster.DescribeWrite(w.describe(ctx, o)))
			continue
		}
		if ctx.Err() != nil {
			return // stopping, and the queue is empty
		}
		t := time.NewTimer(wait)
		select {
		case <-w.wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// describe makes the write a watch event reports, attributed from the
// audit record of the request that caused it, or failing that from the
// object's managedFields.
func (w *writeRecorder) describe(ctx context.Context, o *observed) fakekube.Write {
	wr := fakekube.Write{Kind: o.kind, Resource: o.resource, Namespace: o.namespace, Name: o.name, Object: o.obj}
	var rec *auditRecord
	if w.audit != nil {
		deadline := o.arrived.Add(w.auditWait)
		if ctx.Err() != nil {
			deadline = time.Time{} // stopping: take what has arrived
		}
		rec = w.audit.wait(ctx, o, deadline)
	}
	switch {
	case o.typ == observedDeleted:
		wr.Verb, wr.Removed = "delete", true
	case rec != nil && rec.subresource == "binding":
		wr.Verb, wr.Subresource = "bind", "binding"
	case rec != nil:
		wr.Verb, wr.Subresource = rec.verb, rec.subresource
	default:
		wr.Verb, wr.Subresource = guessVerb(o)
	}
	if rec != nil {
		wr.Actor = rec.actor
	} else {
		// Marked, so that nobody mistakes a guess for the audit's word.
		wr.Actor = guessActor(o) + "?"
	}
	return wr
}

// guessVerb says what kind of write an event was from the change alone.
func guessVerb(o *observed) (verb, subresource string) {
	switch {
	case o.typ == observedAdded:
		return "create", ""
	case o.typ == observedDeleted, o.deleting:
		return "delete", ""
	case o.bound:
		return "bind", "binding"
	}
	if e := changedEntry(o); e != nil {
		return "update", e.Subresource
	}
	return "update", ""
}

// guessActor names the writer from managedFields: the manager whose entry
// the write changed, or else the one that wrote last.
func guessActor(o *observed) string {
	if e := changedEntry(o); e != nil {
		return e.Manager
	}
	m, err := meta.Accessor(o.obj)
	if err != nil {
		return ""
	}
	var newest *metav1.ManagedFieldsEntry
	for i, e := range m.GetManagedFields() {
		if newest == nil || e.Time != nil && newest.Time != nil && !e.Time.Before(newest.Time) {
			newest = &m.GetManagedFields()[i]
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Manager
}

// changedEntry is the managedFields entry an update added or changed, the
// newest if several; nil for other events or if none changed (a delete, a
// binding and a removed finalizer change none).
func changedEntry(o *observed) *metav1.ManagedFieldsEntry {
	if o.typ != observedUpdated {
		return nil
	}
	m, err1 := meta.Accessor(o.obj)
	om, err2 := meta.Accessor(o.old)
	if err1 != nil || err2 != nil {
		return nil
	}
	before := om.GetManagedFields()
	var changed *metav1.ManagedFieldsEntry
	for i, e := range m.GetManagedFields() {
		j := slices.IndexFunc(before, func(b metav1.ManagedFieldsEntry) bool {
			return b.Manager == e.Manager && b.Operation == e.Operation && b.Subresource == e.Subresource
		})
		if j >= 0 && apiequality.Semantic.DeepEqual(before[j], e) {
			continue
		}
		if changed == nil || e.Time != nil && changed.Time != nil && !e.Time.Before(changed.Time) {
			changed = &m.GetManagedFields()[i]
		}
	}
	return changed
}
