package explain

import (
	"context"
	"fmt"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
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
	all := metav1.ListOptions{}
	lists := []struct {
		what string
		list func() error
	}{
		{"pods", func() error {
			l, err := cs.CoreV1().Pods("").List(ctx, all)
			if err == nil {
				s.Pods = l.Items
			}
			return err
		}},
		{"persistentvolumeclaims", func() error {
			l, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, all)
			if err == nil {
				s.Claims = l.Items
			}
			return err
		}},
		{"persistentvolumes", func() error {
			l, err := cs.CoreV1().PersistentVolumes().List(ctx, all)
			if err == nil {
				s.Volumes = l.Items
			}
			return err
		}},
		{"nodes", func() error {
			l, err := cs.CoreV1().Nodes().List(ctx, all)
			if err == nil {
				s.Nodes = l.Items
			}
			return err
		}},
		{"events", func() error {
			l, err := cs.CoreV1().Events("").List(ctx, all)
			if err == nil {
				s.Events = l.Items
			}
			return err
		}},
		{"storageclasses", func() error {
			l, err := cs.StorageV1().StorageClasses().List(ctx, all)
			if err == nil {
				s.Classes = l.Items
			}
			return err
		}},
		{"csidrivers", func() error {
			l, err := cs.StorageV1().CSIDrivers().List(ctx, all)
			if err == nil {
				s.Drivers = l.Items
			}
			return err
		}},
		{"csinodes", func() error {
			l, err := cs.StorageV1().CSINodes().List(ctx, all)
			if err == nil {
				s.CSINodes = l.Items
			}
			return err
		}},
		{"volumeattachments", func() error {
			l, err := cs.StorageV1().VolumeAttachments().List(ctx, all)
			if err == nil {
				s.Attachments = l.Items
			}
			return err
		}},
		{"csistoragecapacities", func() error {
			l, err := cs.StorageV1().CSIStorageCapacities("").List(ctx, all)
			if err == nil {
				s.Capacities = l.Items
			}
			return err
		}},
	}
	for _, l := range lists {
		if err := l.list(); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	snaps, err := snapclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("snapshot client for %s: %w", cfg.Host, err)
	}
	vs, err := snaps.SnapshotV1().VolumeSnapshots("").List(ctx, all)
	switch {
	case apierrors.IsNotFound(err):
		return s, nil // the cluster has no snapshot CRDs
	case err != nil:
		return nil, fmt.Errorf("listing volumesnapshots: %w", err)
	}
	s.VolumeSnapshots = vs.Items
	contents, err := snaps.SnapshotV1().VolumeSnapshotContents().List(ctx, all)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing volumesnapshotcontents: %w", err)
	}
	if err == nil {
		s.SnapshotContents = contents.Items
	}
	return s, nil
}
