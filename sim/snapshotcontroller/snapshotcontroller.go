// Package snapshotcontroller is the simulated snapshot-controller of
// kubernetes-csi/external-snapshotter (its pkg/common-controller): it binds
// VolumeSnapshots to VolumeSnapshotContents — creating snapcontent-<uid>
// for a snapshot of a claim, binding a pre-provisioned content for one
// that names it —, copies the content's status (set by the csi-snapshotter
// sidecar, package snapshotter) into the snapshot's, and keeps the
// finalizers that protect the source claim, the snapshot and the content
// until deletion may go on, deleting the content with its snapshot when
// its deletionPolicy is Delete. Its group path (group.go) does the same
// for VolumeGroupSnapshots and their members.
package snapshotcontroller

import (
	"context"
	"errors"
	"fmt"
	"time"

	groupsnapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	grouplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumegroupsnapshot/v1"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

// Component is the snapshot-controller's name in its events
// (common-controller/snapshot_controller_base.go).
const Component = "snapshot-controller"

// The controller's default retry backoff (cmd/snapshot-controller:
// --retry-interval-start, --retry-interval-max).
const (
	RetryIntervalStart = time.Second
	RetryIntervalMax   = 5 * time.Minute
)

// Controller is one snapshot-controller.
type Controller struct {
	client    kubernetes.Interface
	snaps     snapclientset.Interface
	clock     clock.PassiveClock
	events    record.EventRecorder
	snapshots snaplisters.VolumeSnapshotLister
	contents  snaplisters.VolumeSnapshotContentLister
	classes   snaplisters.VolumeSnapshotClassLister
	claims    corelisters.PersistentVolumeClaimLister
	snapshotQ controller.Queue
	contentQ  controller.Queue
	// The group path's (group.go).
	groups        grouplisters.VolumeGroupSnapshotLister
	groupContents grouplisters.VolumeGroupSnapshotContentLister
	groupClasses  grouplisters.VolumeGroupSnapshotClassLister
	volumes       corelisters.PersistentVolumeLister
	groupQ        controller.Queue
	groupContentQ controller.Queue
}

// New wires a snapshot-controller to its informers: the snapshot kinds'
// and the core ones' (claims).
func New(client kubernetes.Interface, snaps snapclientset.Interface, factory informers.SharedInformerFactory,
	snapFactory snapinformers.SharedInformerFactory, rt controller.Runtime) *Controller {
	events, _ := rt.NewEventRecorder(client, Component, "")
	c := &Controller{client: client, snaps: snaps, clock: rt.Clock, events: events,
		snapshotQ: rt.NewQueueWithBackoff("snapshot-controller-snapshot", RetryIntervalStart, RetryIntervalMax),
		contentQ:  rt.NewQueueWithBackoff("snapshot-controller-content", RetryIntervalStart, RetryIntervalMax),
	}
	snapInf := snapFactory.Snapshot().V1().VolumeSnapshots()
	contentInf := snapFactory.Snapshot().V1().VolumeSnapshotContents()
	c.snapshots, c.contents = snapInf.Lister(), contentInf.Lister()
	c.classes = snapFactory.Snapshot().V1().VolumeSnapshotClasses().Lister()
	c.claims = factory.Core().V1().PersistentVolumeClaims().Lister()
	// Every change of a snapshot or a content is synced; a deleted
	// snapshot syncs its content, a deleted content its snapshot, as the
	// real controller does when its sync finds the object gone.
	_, _ = snapInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSnapshot,
		UpdateFunc: func(_, obj any) { c.enqueueSnapshot(obj) },
		DeleteFunc: func(obj any) {
			s, ok := controller.Unwrap(obj).(*snapv1.VolumeSnapshot)
			if !ok {
				return
			}
			if boundContent(s) != "" {
				c.contentQ.Add(boundContent(s))
			}
		},
	})
	_, _ = contentInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueContent,
		UpdateFunc: func(_, obj any) { c.enqueueContent(obj) },
		DeleteFunc: func(obj any) {
			content, ok := controller.Unwrap(obj).(*snapv1.VolumeSnapshotContent)
			if !ok || content.Spec.VolumeSnapshotRef.Name == "" {
				return
			}
			ref := content.Spec.VolumeSnapshotRef
			c.snapshotQ.Add(ref.Namespace + "/" + ref.Name)
		},
	})
	c.watchGroups(factory, snapFactory, rt)
	return c
}

// watchGroups wires the group path to the group kinds' informers, as
// the real controller does with the VolumeGroupSnapshot feature on (GA in
// v8.7.0): a group's content is synced when the group is deleted, the
// group when its content is.
func (c *Controller) watchGroups(factory informers.SharedInformerFactory, snapFactory snapinformers.SharedInformerFactory, rt controller.Runtime) {
	c.groupQ = rt.NewQueueWithBackoff("snapshot-controller-groupsnapshot", RetryIntervalStart, RetryIntervalMax)
	c.groupContentQ = rt.NewQueueWithBackoff("snapshot-controller-groupsnapshotcontent", RetryIntervalStart, RetryIntervalMax)
	groupInf := snapFactory.Groupsnapshot().V1().VolumeGroupSnapshots()
	contentInf := snapFactory.Groupsnapshot().V1().VolumeGroupSnapshotContents()
	c.groups, c.groupContents = groupInf.Lister(), contentInf.Lister()
	c.groupClasses = snapFactory.Groupsnapshot().V1().VolumeGroupSnapshotClasses().Lister()
	c.volumes = factory.Core().V1().PersistentVolumes().Lister()
	_, _ = groupInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueGroup,
		UpdateFunc: func(_, obj any) { c.enqueueGroup(obj) },
		DeleteFunc: func(obj any) {
			if g, ok := unwrapGroup(obj); ok && groupBoundContent(g) != "" {
				c.groupContentQ.Add(groupBoundContent(g))
			}
		},
	})
	_, _ = contentInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueGroupContent,
		UpdateFunc: func(_, obj any) { c.enqueueGroupContent(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if content, ok := obj.(*groupsnapv1.VolumeGroupSnapshotContent); ok {
				ref := content.Spec.VolumeGroupSnapshotRef
				c.groupQ.Add(ref.Namespace + "/" + ref.Name)
			}
		},
	})
}

func (c *Controller) enqueueSnapshot(obj any) {
	if s, ok := controller.Unwrap(obj).(*snapv1.VolumeSnapshot); ok {
		c.snapshotQ.Add(s.Namespace + "/" + s.Name)
	}
}

func (c *Controller) enqueueContent(obj any) {
	if content, ok := controller.Unwrap(obj).(*snapv1.VolumeSnapshotContent); ok {
		c.contentQ.Add(content.Name)
	}
}

// ResyncPeriod is the controller's --resync-period: every snapshot and
// content is synced again this often (cmd/snapshot-controller).
const ResyncPeriod = 15 * time.Minute

// Resync queues every snapshot and content, as the informers' periodic
// resync does; run it every ResyncPeriod.
func (c *Controller) Resync(context.Context) {
	snapshots, _ := c.snapshots.List(labels.Everything())
	for _, s := range snapshots {
		c.enqueueSnapshot(s)
	}
	contents, _ := c.contents.List(labels.Everything())
	for _, content := range contents {
		c.enqueueContent(content)
	}
	groups, _ := c.groups.List(labels.Everything())
	for _, g := range groups {
		c.enqueueGroup(g)
	}
	groupContents, _ := c.groupContents.List(labels.Everything())
	for _, content := range groupContents {
		c.enqueueGroupContent(content)
	}
}

// Workers are the controller's queues and sync functions.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{
		{Name: "snapshot-controller-snapshot", Queue: c.snapshotQ, Sync: c.syncSnapshotByKey},
		{Name: "snapshot-controller-content", Queue: c.contentQ, Sync: c.syncContentByKey},
		{Name: "snapshot-controller-groupsnapshot", Queue: c.groupQ, Sync: c.syncGroupByKey},
		{Name: "snapshot-controller-groupsnapshotcontent", Queue: c.groupContentQ, Sync: c.syncGroupContentByKey},
	}
}

// Start starts the controller in a simulated cluster (controller.Start):
// its workers, and its resync every ResyncPeriod.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	c := New(d.Client, d.Snapshots, d.Informers, d.SnapshotInformers, d.Runtime)
	return controller.Component{Workers: c.Workers(), Periodic: []controller.Periodic{{Every: ResyncPeriod, Run: c.Resync}}}, nil
}

func (c *Controller) syncSnapshotByKey(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	snapshot, err := c.snapshots.VolumeSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	snapshot, err = c.checkAndUpdateSnapshotClass(ctx, snapshot)
	// A snapshot being deleted whose class is gone is still synced, so
	// that its deletion goes on.
	if err != nil && !(snapshot.DeletionTimestamp != nil && apierrors.IsNotFound(err)) {
		return err
	}
	if err := c.syncSnapshot(ctx, snapshot); err != nil {
		return fmt.Errorf("syncing VolumeSnapshot %s: %w", key, err)
	}
	return nil
}

func (c *Controller) syncContentByKey(ctx context.Context, name string) error {
	content, err := c.contents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.syncContent(ctx, content); err != nil {
		return fmt.Errorf("syncing VolumeSnapshotContent %s: %w", name, err)
	}
	return nil
}

// updateError is the real controller's controllerUpdateError: a failed
// write, in its words (common-controller/snapshot_controller.go).
func updateError(name string, err error) error {
	return fmt.Errorf("snapshot controller failed to update %s on API server: %s", name, err)
}

func boundContent(s *snapv1.VolumeSnapshot) string {
	if s.Status == nil || s.Status.BoundVolumeSnapshotContentName == nil {
		return ""
	}
	return *s.Status.BoundVolumeSnapshotContentName
}

func snapshotKey(s *snapv1.VolumeSnapshot) string { return s.Namespace + "/" + s.Name }

// isReady: status.readyToUse is true.
func isReady(s *snapv1.VolumeSnapshot) bool {
	return s.Status != nil && s.Status.ReadyToUse != nil && *s.Status.ReadyToUse
}

var errNoClaim = errors.New("the snapshot source PVC name is not specified")

// claimOf is the snapshot's source claim, from the cache.
func (c *Controller) claimOf(s *snapv1.VolumeSnapshot) (*corev1.PersistentVolumeClaim, error) {
	if s.Spec.Source.PersistentVolumeClaimName == nil {
		return nil, errNoClaim
	}
	name := *s.Spec.Source.PersistentVolumeClaimName
	if name == "" {
		return nil, fmt.Errorf("the PVC name is not specified in snapshot %s", snapshotKey(s))
	}
	claim, err := c.claims.PersistentVolumeClaims(s.Namespace).Get(name)
	if err != nil {
		return nil, fmt.Errorf("failed to retrieve PVC %s from the lister: %q", name, err)
	}
	return claim, nil
}
