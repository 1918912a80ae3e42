package diff

import (
	"context"
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Objects are the objects of the lifecycle's kinds at one moment, as
// listed from a cluster.
type Objects struct {
	PVCs              []corev1.PersistentVolumeClaim
	PVs               []corev1.PersistentVolume
	Pods              []corev1.Pod
	VolumeAttachments []storagev1.VolumeAttachment
	Nodes             []corev1.Node
	CSINodes          []storagev1.CSINode
	Events            []corev1.Event
	StorageClasses    []storagev1.StorageClass
	CSIDrivers        []storagev1.CSIDriver
	// The snapshot kinds, from the CRDs of external-snapshotter.
	VolumeSnapshots        []snapv1.VolumeSnapshot
	VolumeSnapshotContents []snapv1.VolumeSnapshotContent
	VolumeSnapshotClasses  []snapv1.VolumeSnapshotClass
	// The workload kinds (workloadkinds.go).
	Workloads
}

// Clients are what a snapshot lists objects with: the core kinds', and
// the snapshot CRDs'.
type Clients struct {
	Kube      kubernetes.Interface
	Snapshots snapclientset.Interface
}

// NewClients makes the clients of a cluster.
func NewClients(cfg *rest.Config) (Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	snaps, err := snapclientset.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Kube: kube, Snapshots: snaps}, nil
}

// At lists at exactly the given resourceVersion (the API server reads a
// past state back from etcd); "" lists the current state.
func At(resourceVersion string) metav1.ListOptions {
	if resourceVersion == "" {
		return metav1.ListOptions{}
	}
	return metav1.ListOptions{ResourceVersion: resourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
}

// Revision is the API server's current resourceVersion: what a list at
// this moment would be read at. One small request, so that a step's end
// can be marked without delaying the next step.
func Revision(ctx context.Context, cs kubernetes.Interface) (string, error) {
	l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", fmt.Errorf("reading the API server's resourceVersion: %w", err)
	}
	return l.ResourceVersion, nil
}

// List lists the objects of every kind a snapshot shows, with opts (At).
func List(ctx context.Context, cl Clients, opts metav1.ListOptions) (Objects, error) {
	var o Objects
	cs := cl.Kube
	errf := func(kind string, err error) error { return fmt.Errorf("listing %s: %w", kind, err) }
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, opts)
	if err != nil {
		return o, errf("PersistentVolumeClaims", err)
	}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, opts)
	if err != nil {
		return o, errf("PersistentVolumes", err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, opts)
	if err != nil {
		return o, errf("Pods", err)
	}
	vas, err := cs.StorageV1().VolumeAttachments().List(ctx, opts)
	if err != nil {
		return o, errf("VolumeAttachments", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return o, errf("Nodes", err)
	}
	csiNodes, err := cs.StorageV1().CSINodes().List(ctx, opts)
	if err != nil {
		return o, errf("CSINodes", err)
	}
	events, err := cs.CoreV1().Events("").List(ctx, opts)
	if err != nil {
		return o, errf("Events", err)
	}
	classes, err := cs.StorageV1().StorageClasses().List(ctx, opts)
	if err != nil {
		return o, errf("StorageClasses", err)
	}
	drivers, err := cs.StorageV1().CSIDrivers().List(ctx, opts)
	if err != nil {
		return o, errf("CSIDrivers", err)
	}
	workloads, err := listWorkloads(ctx, cs, opts)
	if err != nil {
		return o, err
	}
	o = Objects{PVCs: pvcs.Items, PVs: pvs.Items, Pods: pods.Items, VolumeAttachments: vas.Items, Nodes: nodes.Items,
		CSINodes: csiNodes.Items, Events: events.Items, StorageClasses: classes.Items, CSIDrivers: drivers.Items, Workloads: workloads}
	if cl.Snapshots == nil {
		return o, nil
	}
	snaps, err := cl.Snapshots.SnapshotV1().VolumeSnapshots("").List(ctx, opts)
	if err != nil {
		return o, errf("VolumeSnapshots", err)
	}
	contents, err := cl.Snapshots.SnapshotV1().VolumeSnapshotContents().List(ctx, opts)
	if err != nil {
		return o, errf("VolumeSnapshotContents", err)
	}
	snapClasses, err := cl.Snapshots.SnapshotV1().VolumeSnapshotClasses().List(ctx, opts)
	if err != nil {
		return o, errf("VolumeSnapshotClasses", err)
	}
	o.VolumeSnapshots, o.VolumeSnapshotContents, o.VolumeSnapshotClasses = snaps.Items, contents.Items, snapClasses.Items
	return o, nil
}
