package cluster

import (
	"errors"
	"time"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/sim/loop"
	"github.com/csisim/csisim/trace"
)

// clients makes what the components talk through, each under the name of
// the component, as each real process has its own: clientsets of the API
// server, informer factories whose informers the loop feeds, and
// connections to the CSI driver whose calls go in the timeline.
type clients struct {
	api  *fakekube.Server
	loop *loop.Loop
	rec  *trace.Recorder
	// nodeCaches are the informers the kubelets share (kubeletInformers).
	nodeCaches map[schema.GroupVersionResource]*loop.Informer
	// fanout hands the writes of those caches to the kubelets they
	// concern, with one handler each (kubelet.Fanout).
	fanout *kubelet.Fanout
	// conns are the CSI connections by endpoint and actor (dial).
	conns map[[2]string]*csiclient.Conn
	// processConns are the components' own connections (dialOf), and
	// processes counts them, to name each.
	processConns []*csiclient.Conn
	processes    int
}

func newClients(api *fakekube.Server, l *loop.Loop, rec *trace.Recorder) *clients {
	return &clients{api: api, loop: l, rec: rec, nodeCaches: map[schema.GroupVersionResource]*loop.Informer{},
		fanout: kubelet.NewFanout(), conns: map[[2]string]*csiclient.Conn{}}
}

// client returns a clientset that names itself userAgent to the API server,
// so its writes are attributed to it in the timeline.
func (cl *clients) client(userAgent string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(cl.api.RESTConfig(userAgent))
}

// dial connects actor to a driver's endpoint; its calls are recorded under
// actor, and with driver as their driver if it is not "" (a cluster of
// several). An actor has one connection to an endpoint: dialling again
// returns it.
func (cl *clients) dial(endpoint, actor, driver string) (*csiclient.Conn, error) {
	key := [2]string{endpoint, actor}
	if conn := cl.conns[key]; conn != nil {
		return conn, nil
	}
	conn, err := csiclient.Dial(endpoint, actor, cl.rec, csiclient.Virtual(), csiclient.Driver(driver))
	if err != nil {
		return nil, err
	}
	cl.conns[key] = conn
	return conn, nil
}

// close closes the CSI connections.
func (cl *clients) close() error {
	var errs []error
	for _, conn := range cl.conns {
		errs = append(errs, conn.Close())
	}
	for _, conn := range cl.processConns {
		errs = append(errs, conn.Close())
	}
	return errors.Join(errs...)
}

// informerKind is a kind a component's informer factory serves from the
// loop's informers.
type informerKind struct {
	obj      runtime.Object
	gvr      schema.GroupVersionResource
	selector string
}

// coreKinds are the kinds every control-plane component's factory
// serves; appsKinds those the workload controllers' also serve.
var (
	coreKinds = []informerKind{
		{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods"), ""},
		{&corev1.Node{}, corev1.SchemeGroupVersion.WithResource("nodes"), ""},
		{&corev1.PersistentVolumeClaim{}, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), ""},
		{&corev1.PersistentVolume{}, corev1.SchemeGroupVersion.WithResource("persistentvolumes"), ""},
		{&storagev1.StorageClass{}, storagev1.SchemeGroupVersion.WithResource("storageclasses"), ""},
		{&storagev1.CSIDriver{}, storagev1.SchemeGroupVersion.WithResource("csidrivers"), ""},
		{&storagev1.CSINode{}, storagev1.SchemeGroupVersion.WithResource("csinodes"), ""},
		{&storagev1.VolumeAttachment{}, storagev1.SchemeGroupVersion.WithResource("volumeattachments"), ""},
		{&storagev1.CSIStorageCapacity{}, storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"), ""},
		{&coordinationv1.Lease{}, coordinationv1.SchemeGroupVersion.WithResource("leases"), ""},
	}
	appsKinds = []informerKind{
		{&appsv1.StatefulSet{}, appsv1.SchemeGroupVersion.WithResource("statefulsets"), ""},
		{&appsv1.ControllerRevision{}, appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), ""},
		{&appsv1.ReplicaSet{}, appsv1.SchemeGroupVersion.WithResource("replicasets"), ""},
		{&appsv1.Deployment{}, appsv1.SchemeGroupVersion.WithResource("deployments"), ""},
	}
	// daemonSetKinds the DaemonSet controller's also serves.
	daemonSetKinds = []informerKind{
		{&appsv1.DaemonSet{}, appsv1.SchemeGroupVersion.WithResource("daemonsets"), ""},
	}
	// attributesClassKinds the external-resizer's also serves, for its
	// modify controller.
	attributesClassKinds = []informerKind{
		{&storagev1.VolumeAttributesClass{}, storagev1.SchemeGroupVersion.WithResource("volumeattributesclasses"), ""},
	}
	snapshotKinds = []informerKind{
		{&snapv1.VolumeSnapshot{}, snapv1.SchemeGroupVersion.WithResource("volumesnapshots"), ""},
		{&snapv1.VolumeSnapshotContent{}, snapv1.SchemeGroupVersion.WithResource("volumesnapshotcontents"), ""},
		{&snapv1.VolumeSnapshotClass{}, snapv1.SchemeGroupVersion.WithResource("volumesnapshotclasses"), ""},
	}
	// groupSnapshotKinds are the group snapshot kinds the csi-snapshotter
	// of v8.7.0 watches (the feature is GA there: cmd/csi-snapshotter);
	// the snapshot-controller watches VolumeGroupSnapshots too.
	groupSnapshotKinds = []informerKind{
		{&groupsnapv1.VolumeGroupSnapshotContent{}, groupsnapv1.SchemeGroupVersion.WithResource("volumegroupsnapshotcontents"), ""},
		{&groupsnapv1.VolumeGroupSnapshotClass{}, groupsnapv1.SchemeGroupVersion.WithResource("volumegroupsnapshotclasses"), ""},
	}
	groupSnapshotControllerKinds = append([]informerKind{
		{&groupsnapv1.VolumeGroupSnapshot{}, groupsnapv1.SchemeGroupVersion.WithResource("volumegroupsnapshots"), ""},
	}, groupSnapshotKinds...)
)

// loopInformers makes the loop's informers of kinds for component, in
// order, and hands each to register.
func (cl *clients) loopInformers(component string, kinds []informerKind, register func(runtime.Object, *loop.Informer)) error {
	for _, k := range kinds {
		inf, err := cl.loop.NewInformer(k.gvr, k.selector)
		if err != nil {
			return err
		}
		inf.BelongsTo(component) // for watch-drop, and to stop them
		register(k.obj, inf)
	}
	return nil
}

// informers returns an informer factory of kinds for one component (by
// its user agent) whose informers the loop feeds.
func (cl *clients) informers(component string, cs kubernetes.Interface, kinds ...[]informerKind) (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactory(cs, 0)
	// Registered first, the loop's informer is what the component's
	// typed accessors (factory.Core().V1().Pods()...) hand out.
	register := func(obj runtime.Object, inf *loop.Informer) {
		f.InformerFor(obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	for _, k := range kinds {
		if err := cl.loopInformers(component, k, register); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// snapshotInformers returns the informer factory of the snapshot kinds
// for one component, whose informers the loop feeds, as informers does
// for the core kinds.
func (cl *clients) snapshotInformers(component string, cs snapclientset.Interface, groupKinds []informerKind) (snapinformers.SharedInformerFactory, error) {
	f := snapinformers.NewSharedInformerFactory(cs, 0)
	register := func(obj runtime.Object, inf *loop.Informer) {
		f.InformerFor(obj, func(snapclientset.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	if err := cl.loopInformers(component, snapshotKinds, register); err != nil {
		return f, err
	}
	return f, cl.loopInformers(component, groupKinds, register)
}

// kubeletInformers returns a kubelet's informer factory. A real kubelet
// watches its own pods and its own Node, and reads claims, volumes and
// attachments by GETs when its volume manager needs them; the simulated
// one watches its pods and its Node and reads the rest from caches all
// simulated kubelets share (cl.nodeCaches), which the loop keeps as
// current as a GET would be. Each kubelet still registers its own
// handlers on them. With a hundred nodes, a write then updates one cache
// instead of a hundred.
func (cl *clients) kubeletInformers(node string, cs kubernetes.Interface) (informers.SharedInformerFactory, error) {
	own := []informerKind{
		{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods"), "spec.nodeName=" + node},
		{&corev1.Node{}, corev1.SchemeGroupVersion.WithResource("nodes"), "metadata.name=" + node},
	}
	f, err := cl.informers(fault.KubeletComponent(node), cs, own)
	if err != nil {
		return nil, err
	}
	for _, k := range []informerKind{
		{&corev1.PersistentVolumeClaim{}, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), ""},
		{&corev1.PersistentVolume{}, corev1.SchemeGroupVersion.WithResource("persistentvolumes"), ""},
		{&storagev1.CSIDriver{}, storagev1.SchemeGroupVersion.WithResource("csidrivers"), ""},
		{&storagev1.VolumeAttachment{}, storagev1.SchemeGroupVersion.WithResource("volumeattachments"), ""},
	} {
		inf := cl.nodeCaches[k.gvr]
		if inf == nil {
			if inf, err = cl.loop.NewInformer(k.gvr, ""); err != nil {
				return nil, err
			}
			inf.BelongsTo(nodeCachesComponent)
			cl.nodeCaches[k.gvr] = inf
		}
		f.InformerFor(k.obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	return f, nil
}

// nodeCachesComponent owns the caches the simulated kubelets share.
const nodeCachesComponent = "kubelets"
