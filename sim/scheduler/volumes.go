package scheduler

// What the volume filters read of the cluster: a pod's claims and their
// classes, the capacity for provisioning, the CSI volumes counted against a
// node's limits.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// podVolumes resolves the pod's claims, or says why the pod cannot be
// scheduled at all.
func (s *Scheduler) podVolumes(pod *corev1.Pod) (podVolumes, string) {
	vols := podVolumes{classes: map[string]*storagev1.StorageClass{}}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		name, ok := volumeutil.ClaimName(pod, v)
		if !ok {
			continue
		}
		// The volume binding plugin's podHasPVCs
		// (pkg/scheduler/framework/plugins/volumebinding/volume_binding.go).
		claim, err := s.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if v.Ephemeral != nil {
				// Normal just after the pod is created.
				return vols, fmt.Sprintf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name)
			}
			return vols, fmt.Sprintf("persistentvolumeclaim %q not found", name)
		}
		if claim.Status.Phase == corev1.ClaimLost {
			return vols, fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", name, claim.Spec.VolumeName)
		}
		if slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteOncePod) {
			vols.readWriteOncePodClaims = append(vols.readWriteOncePodClaims, name)
			if users := s.claimUsers(pod, name); len(users) > 0 {
				vols.readWriteOncePodInUse = true
				vols.readWriteOncePodUsers = append(vols.readWriteOncePodUsers, users...)
			}
		}
		if claim.DeletionTimestamp != nil {
			return vols, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
		}
		if v.Ephemeral != nil {
			if err := ephemeral.VolumeIsForPod(pod, claim); err != nil {
				return vols, err.Error()
			}
		}
		if claim.Spec.VolumeName != "" {
			pv, err := s.volumes.Get(claim.Spec.VolumeName)
			if err != nil {
				return vols, fmt.Sprintf("persistentvolume %q not found", claim.Spec.VolumeName)
			}
			vols.bound = append(vols.bound, pv)
			continue
		}
		class, _ := s.classes.Get(className(claim))
		if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return vols, "pod has unbound immediate PersistentVolumeClaims"
		}
		vols.classes[class.Name] = class
		vols.delayed = append(vols.delayed, claim)
		if sel := claim.Annotations[storagehelpers.AnnSelectedNode]; sel != "" {
			vols.selected = sel
		}
	}
	if len(vols.delayed) > 0 {
		vols.available, _ = s.volumes.List(labels.Everything())
		vols.capacity = s.hasCapacity
	}
	return vols, ""
}

// claimUsers are the pods other than pod, bound to a node and not
// finished (the scheduler's cache of assigned pods, terminating ones
// included), that use the claim: VolumeRestrictions' PreFilter count for
// a ReadWriteOncePod claim. They come in the order of their keys.
func (s *Scheduler) claimUsers(pod *corev1.Pod, claim string) []*corev1.Pod {
	var users []*corev1.Pod
	for _, obj := range s.podIndex.List() {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.UID == pod.UID || p.Namespace != pod.Namespace || p.Spec.NodeName == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if usesClaim(p, claim) {
			users = append(users, p)
		}
	}
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	return users
}

// hasCapacity is the volume binding plugin's capacity check: when the
// class's CSIDriver has storageCapacity, some CSIStorageCapacity of the
// class whose topology the node matches must fit the request (by its
// maximumVolumeSize if set, else its capacity).
func (s *Scheduler) hasCapacity(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) bool {
	_, ok := s.nodeCapacity(claim, class, node)
	return ok
}

// nodeCapacity is the CSIStorageCapacity the volume binding plugin finds
// for provisioning the claim for the node, and whether there is room: nil
// and true when the class's CSIDriver does not publish capacity. Of
// several that fit, the first by namespace and name (the real plugin takes
// the first its informer lists).
func (s *Scheduler) nodeCapacity(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) (*storagev1.CSIStorageCapacity, bool) {
	drv, err := s.drivers.Get(class.Provisioner)
	if err != nil || drv.Spec.StorageCapacity == nil || !*drv.Spec.StorageCapacity {
		return nil, true
	}
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	all, _ := s.capacities.List(labels.Everything())
	sort.Slice(all, func(i, j int) bool {
		return all[i].Namespace+"/"+all[i].Name < all[j].Namespace+"/"+all[j].Name
	})
	for _, c := range all {
		if c.StorageClassName != class.Name || c.NodeTopology == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.NodeTopology)
		if err != nil || !sel.Matches(labels.Set(node.Labels)) {
			continue
		}
		size := c.Capacity
		if c.MaximumVolumeSize != nil {
			size = c.MaximumVolumeSize
		}
		if size != nil && size.Cmp(request) >= 0 {
			return c, true
		}
	}
	return nil, false
}

// volumeScorer is the VolumeBinding plugin's score (StorageCapacityScoring,
// on by default in v1.37), per storage class averaged: on a node where
// static volumes would be bound, the claims' requests against those
// volumes' capacities; else the requests of the claims to provision
// against the capacity published for the node (claims whose driver
// publishes none do not count). Nil when the pod has no claim to bind.
func (s *Scheduler) volumeScorer(vols podVolumes) func(*corev1.Node) int64 {
	if len(vols.delayed) == 0 {
		return nil
	}
	type use struct{ requested, capacity int64 }
	return func(node *corev1.Node) int64 {
		classes := map[string]*use{}
		at := func(class string) *use {
			if classes[class] == nil {
				classes[class] = &use{}
			}
			return classes[class]
		}
		static := staticMatches(vols.delayed, vols.available, node)
		for claim, pv := range static {
			u := at(pv.Spec.StorageClassName)
			req, capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage], pv.Spec.Capacity[corev1.ResourceStorage]
			u.requested += req.Value()
			u.capacity += capacity.Value()
		}
		for _, claim := range vols.delayed {
			class := vols.classes[className(claim)]
			if len(static) > 0 || class == nil {
				continue
			}
			c, _ := s.nodeCapacity(claim, class, node)
			if c == nil {
				continue
			}
			u := at(class.Name)
			if c.Capacity != nil {
				u.capacity = c.Capacity.Value()
			}
			req := claim.Spec.Resources.Requests[corev1.ResourceStorage]
			u.requested += req.Value()
		}
		if len(classes) == 0 {
			return 0
		}
		var sum int64
		for _, u := range classes {
			sum += volumeUtilizationScore(u.requested, u.capacity)
		}
		return int64(math.Round(float64(sum) / float64(len(classes))))
	}
}

// overVolumeLimit: the pod's CSI volumes (wanted) do not fit under the
// node's CSINode allocatable counts, next to the volumes the node's pods
// use and the volumes attached to it.
func (s *Scheduler) overVolumeLimit(node *corev1.Node, wanted map[string]string) bool {
	if len(wanted) == 0 {
		return false
	}
	csiNode, err := s.csiNodes.Get(node.Name)
	if err != nil {
		return false
	}
	limits := map[string]int32{}
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			limits[d.Name] = *d.Allocatable.Count
		}
	}
	if len(limits) == 0 {
		return false
	}
	attached := map[string]string{}
	for _, p := range s.runningOn(node.Name) {
		maps.Copy(attached, s.podCSIVolumes(p))
	}
	vas, _ := volumeutil.ByIndex[*storagev1.VolumeAttachment](s.vaIndex, volumeutil.AttachmentsByNode, node.Name)
	for _, va := range vas {
		if va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		if pv, err := s.volumes.Get(*va.Spec.Source.PersistentVolumeName); err == nil && csiOf(pv) != nil {
			pv = csiOf(pv)
			attached[pv.Spec.CSI.Driver+"/"+pv.Spec.CSI.VolumeHandle] = pv.Spec.CSI.Driver
		}
	}
	return exceedsVolumeLimits(limits, attached, wanted)
}

// podCSIVolumes are the CSI volumes a pod's claims stand for, by unique
// name to driver: a bound claim's volume by driver and handle, an unbound
// one by claim under its class's provisioner, a migrated inline volume by
// its driver and translated handle. Claims that cannot be looked up are
// not counted.
func (s *Scheduler) podCSIVolumes(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for i := range pod.Spec.Volumes {
		// An inline in-tree volume of a plugin that migrated counts for
		// its CSI driver (csi.go checkAttachableInlineVolume); one the
		// library cannot translate is not counted.
		if pv, migrated, err := migration.Inline(&pod.Spec.Volumes[i], pod.Namespace); migrated {
			if err == nil {
				out[pv.Spec.CSI.Driver+"/"+pv.Spec.CSI.VolumeHandle] = pv.Spec.CSI.Driver
			}
			continue
		}
		name, ok := volumeutil.ClaimName(pod, &pod.Spec.Volumes[i])
		if !ok {
			continue
		}
		claim, err := s.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			continue
		}
		if claim.Spec.VolumeName != "" {
			if pv, err := s.volumes.Get(claim.Spec.VolumeName); err == nil && csiOf(pv) != nil {
				pv = csiOf(pv)
				out[pv.Spec.CSI.Driver+"/"+pv.Spec.CSI.VolumeHandle] = pv.Spec.CSI.Driver
			}
			continue
		}
		if class, err := s.classes.Get(className(claim)); err == nil && class.Provisioner != "" {
			provisioner := class.Provisioner
			if driver, ok := migration.DriverFor(provisioner); ok {
				provisioner = driver // getCSIDriverInfoFromSC: an in-tree class counts for its driver
			}
			out[provisioner+"/unbound:"+claim.Namespace+"/"+claim.Name] = provisioner
		}
	}
	return out
}

// csiOf is a volume as the NodeVolumeLimits filter counts it: an in-tree
// one whose plugin migrated as its CSI driver's (getCSIDriverInfo; every
// simulated kubelet lists v1.37's migrated plugins on its CSINode), nil
// for one that is no CSI volume.
func csiOf(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	pv = migration.CSIPV(pv)
	if pv == nil || pv.Spec.CSI == nil {
		return nil
	}
	return pv
}
