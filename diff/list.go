package diff

import (
	"context"
	"fmt"

	"github.com/csisim/csisim/internal/kubelist"
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
	// The group snapshot kinds (groupsnapshotkinds.go).
	GroupSnapshots
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
	core, storage := cl.Kube.CoreV1(), cl.Kube.StorageV1()
	err := kubelist.All(ctx, opts, []kubelist.Kind{
		kubelist.Into("PersistentVolumeClaims", &o.PVCs, core.PersistentVolumeClaims("").List,
			func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items }),
		kubelist.Into("PersistentVolumes", &o.PVs, core.PersistentVolumes().List,
			func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items }),
		kubelist.Into("Pods", &o.Pods, core.Pods("").List, func(l *corev1.PodList) []corev1.Pod { return l.Items }),
		kubelist.Into("VolumeAttachments", &o.VolumeAttachments, storage.VolumeAttachments().List,
			func(l *storagev1.VolumeAttachmentList) []storagev1.VolumeAttachment { return l.Items }),
		kubelist.Into("Nodes", &o.Nodes, core.Nodes().List, func(l *corev1.NodeList) []corev1.Node { return l.Items }),
		kubelist.Into("CSINodes", &o.CSINodes, storage.CSINodes().List,
			func(l *storagev1.CSINodeList) []storagev1.CSINode { return l.Items }),
		kubelist.Into("Events", &o.Events, core.Events("").List, func(l *corev1.EventList) []corev1.Event { return l.Items }),
		kubelist.Into("StorageClasses", &o.StorageClasses, storage.StorageClasses().List,
			func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items }),
		kubelist.Into("CSIDrivers", &o.CSIDrivers, storage.CSIDrivers().List,
			func(l *storagev1.CSIDriverList) []storagev1.CSIDriver { return l.Items }),
	})
	if err != nil {
		return Objects{}, err
	}
	if o.Workloads, err = listWorkloads(ctx, cl.Kube, opts); err != nil {
		return Objects{}, err
	}
	if cl.Snapshots == nil {
		return o, nil
	}
	var snaps Objects
	snapshots := cl.Snapshots.SnapshotV1()
	err = kubelist.All(ctx, opts, []kubelist.Kind{
		kubelist.Into("VolumeSnapshots", &snaps.VolumeSnapshots, snapshots.VolumeSnapshots("").List,
			func(l *snapv1.VolumeSnapshotList) []snapv1.VolumeSnapshot { return l.Items }),
		kubelist.Into("VolumeSnapshotContents", &snaps.VolumeSnapshotContents, snapshots.VolumeSnapshotContents().List,
			func(l *snapv1.VolumeSnapshotContentList) []snapv1.VolumeSnapshotContent { return l.Items }),
		kubelist.Into("VolumeSnapshotClasses", &snaps.VolumeSnapshotClasses, snapshots.VolumeSnapshotClasses().List,
			func(l *snapv1.VolumeSnapshotClassList) []snapv1.VolumeSnapshotClass { return l.Items }),
	})
	if err != nil {
		return o, err
	}
	o.VolumeSnapshots, o.VolumeSnapshotContents, o.VolumeSnapshotClasses = snaps.VolumeSnapshots, snaps.VolumeSnapshotContents, snaps.VolumeSnapshotClasses
	o.GroupSnapshots, err = listGroupSnapshots(ctx, cl, opts)
	return o, err
}
