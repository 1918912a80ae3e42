package explain

import (
	"context"
	"fmt"
	"time"

	"github.com/csisim/csisim/internal/kubelist"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// FromCluster reads a Snapshot from a live cluster (csisim serve, or any
// real one): every object of the kinds Explain reads, in all namespaces,
// and now as the local clock says. VolumeSnapshots are read if the
// cluster serves them. A live cluster does not say when removed objects
// went, so Gone stays empty.
func FromCluster(ctx context.Context, cfg *rest.Config) (*Snapshot, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	s := &Snapshot{Now: time.Now()}
	core, storage := cs.CoreV1(), cs.StorageV1()
	err = kubelist.All(ctx, metav1.ListOptions{}, []kubelist.Kind{
		kubelist.Into("pods", &s.Pods, core.Pods("").List, func(l *corev1.PodList) []corev1.Pod { return l.Items }),
		kubelist.Into("persistentvolumeclaims", &s.Claims, core.PersistentVolumeClaims("").List,
			func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items }),
		kubelist.Into("persistentvolumes", &s.Volumes, core.PersistentVolumes().List,
			func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items }),
		kubelist.Into("nodes", &s.Nodes, core.Nodes().List, func(l *corev1.NodeList) []corev1.Node { return l.Items }),
		kubelist.Into("events", &s.Events, core.Events("").List, func(l *corev1.EventList) []corev1.Event { return l.Items }),
		kubelist.Into("storageclasses", &s.Classes, storage.StorageClasses().List,
			func(l *storagev1.StorageClassList) []storagev1.StorageClass { return l.Items }),
		kubelist.Into("csidrivers", &s.Drivers, storage.CSIDrivers().List,
			func(l *storagev1.CSIDriverList) []storagev1.CSIDriver { return l.Items }),
		kubelist.Into("csinodes", &s.CSINodes, storage.CSINodes().List,
			func(l *storagev1.CSINodeList) []storagev1.CSINode { return l.Items }),
		kubelist.Into("volumeattachments", &s.Attachments, storage.VolumeAttachments().List,
			func(l *storagev1.VolumeAttachmentList) []storagev1.VolumeAttachment { return l.Items }),
		kubelist.Into("csistoragecapacities", &s.Capacities, storage.CSIStorageCapacities("").List,
			func(l *storagev1.CSIStorageCapacityList) []storagev1.CSIStorageCapacity { return l.Items }),
	})
	if err != nil {
		return nil, err
	}
	if err := listSnapshots(ctx, cfg, s); err != nil {
		return nil, err
	}
	return s, nil
}

// listSnapshots reads the VolumeSnapshots and their contents into s, if
// the cluster serves them.
func listSnapshots(ctx context.Context, cfg *rest.Config, s *Snapshot) error {
	all := metav1.ListOptions{}
	snaps, err := snapclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("snapshot client for %s: %w", cfg.Host, err)
	}
	vs, err := snaps.SnapshotV1().VolumeSnapshots("").List(ctx, all)
	switch {
	case apierrors.IsNotFound(err):
		return nil // the cluster has no snapshot CRDs
	case err != nil:
		return fmt.Errorf("listing volumesnapshots: %w", err)
	}
	s.VolumeSnapshots = vs.Items
	contents, err := snaps.SnapshotV1().VolumeSnapshotContents().List(ctx, all)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("listing volumesnapshotcontents: %w", err)
	}
	if err == nil {
		s.SnapshotContents = contents.Items
	}
	return nil
}
