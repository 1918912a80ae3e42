package provisioner

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/csisim/csisim/sim/csiclient"
)

// Storage capacity tracking, as the sidecar does with --enable-capacity:
// for every WaitForFirstConsumer class of the driver and every topology
// segment of the nodes that run it, GetCapacity's answer is published as a
// CSIStorageCapacity object, which the scheduler reads when the CSIDriver
// has storageCapacity: true.

// CapacityNamespace is where the objects are published (the sidecar uses
// its own pod's namespace).
const CapacityNamespace = "kube-system"

// CapacityPollInterval is the sidecar's --capacity-poll-interval.
const CapacityPollInterval = 60 // seconds

// The capacity queue's keys say which objects to publish again: all of
// them (capacityKey: the poll, and changes of classes, nodes and drivers),
// a class's, or those of one topology segment.
const (
	capacityKey        = "capacity"
	classCapacityPfx   = "class:"
	segmentCapacityPfx = "segment:"
)

func classCapacityKey(class string) string { return classCapacityPfx + class }

// refreshCapacityAfterProvision publishes again, as the sidecar does after
// a volume is made, the objects of the segments in the new PV's node
// affinity, or of its class when it has none. A segment must be the
// objects' exactly: csisim's driver reports zone and node for a node but
// makes volumes for a zone, so here nothing is refreshed and the objects
// catch up at the next poll, as on a real cluster.
func (p *Provisioner) refreshCapacityAfterProvision(pv *corev1.PersistentVolume, class *storagev1.StorageClass) {
	if pv.Spec.NodeAffinity == nil {
		p.capacityQ.Add(classCapacityKey(class.Name))
		return
	}
	p.refreshCapacityOfVolume(pv)
}

// refreshCapacityOfVolume publishes again the objects of the segments of a
// volume's node affinity, as the sidecar does after a volume is made or
// deleted.
func (p *Provisioner) refreshCapacityOfVolume(pv *corev1.PersistentVolume) {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		seg := map[string]string{}
		ok := len(t.MatchFields) == 0
		for _, e := range t.MatchExpressions {
			if e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 {
				ok = false
				break
			}
			seg[e.Key] = e.Values[0]
		}
		if ok {
			p.capacityQ.Add(segmentCapacityPfx + segmentString(termOf(seg)))
		}
	}
}

// syncCapacity refreshes the CSIStorageCapacity objects the key names.
func (p *Provisioner) syncCapacity(ctx context.Context, key string) error {
	onlyClass, hasClass := strings.CutPrefix(key, classCapacityPfx)
	onlySegment, hasSegment := strings.CutPrefix(key, segmentCapacityPfx)
	drv, err := p.drivers.Get(p.cfg.DriverName)
	if err != nil || drv.Spec.StorageCapacity == nil || !*drv.Spec.StorageCapacity {
		return nil
	}
	classes, err := p.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i].Name < classes[j].Name })
	existing, err := p.capacities.CSIStorageCapacities(CapacityNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, class := range classes {
		if class.Provisioner != p.cfg.DriverName || !delayed(class) || hasClass && class.Name != onlyClass {
			continue
		}
		for _, seg := range p.driverSegments() {
			if hasSegment && segmentString(termOf(seg)) != onlySegment {
				continue
			}
			if err := p.publishCapacity(ctx, class, seg, existing); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Provisioner) publishCapacity(ctx context.Context, class *storagev1.StorageClass, seg map[string]string, existing []*storagev1.CSIStorageCapacity) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, p.cfg.Timeout)
	resp, err := p.csi.GetCapacity(callCtx, &csi.GetCapacityRequest{
		// The sidecar sends the class's parameters as they are here.
		Parameters:         class.Parameters,
		AccessibleTopology: &csi.Topology{Segments: seg},
		// and no capabilities: capacity is taken not to depend on them.
	})
	cancel()
	if err != nil {
		return fmt.Errorf("GetCapacity for class %s in %v: %w", class.Name, seg, err)
	}
	capacity := resource.NewQuantity(resp.GetAvailableCapacity(), resource.BinarySI)
	var maxSize *resource.Quantity
	if m := resp.GetMaximumVolumeSize(); m != nil {
		maxSize = resource.NewQuantity(m.GetValue(), resource.BinarySI)
	}
	topology := &metav1.LabelSelector{MatchLabels: seg}
	for _, c := range existing {
		if c.StorageClassName != class.Name || c.NodeTopology == nil || !equalSegments(c.NodeTopology.MatchLabels, seg) {
			continue
		}
		if c.Capacity != nil && c.Capacity.Cmp(*capacity) == 0 && equalQuantity(c.MaximumVolumeSize, maxSize) {
			return nil
		}
		next := c.DeepCopy()
		next.Capacity, next.MaximumVolumeSize = capacity, maxSize
		_, err := p.client.StorageV1().CSIStorageCapacities(CapacityNamespace).Update(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return nil // the next poll sees the newer object
		}
		return err
	}
	obj := &storagev1.CSIStorageCapacity{
		ObjectMeta:        metav1.ObjectMeta{GenerateName: "csisc-", Namespace: CapacityNamespace},
		NodeTopology:      topology,
		StorageClassName:  class.Name,
		Capacity:          capacity,
		MaximumVolumeSize: maxSize,
	}
	_, err = p.client.StorageV1().CSIStorageCapacities(CapacityNamespace).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func equalQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(*b) == 0
}
