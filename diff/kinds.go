package diff

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The core kinds of the lifecycle in a snapshot: what `kubectl get` and
// `kubectl describe` show of them.

func system(namespace string) bool { return slices.Contains(systemNamespaces, namespace) }

// claimObjects adds the claims and the volumes.
func (n *Normaliser) claimObjects(add func(Object), objs Objects) {
	for _, c := range objs.PVCs {
		if system(c.Namespace) {
			continue
		}
		o := n.object("PersistentVolumeClaim", c.ObjectMeta)
		o.Phase = string(c.Status.Phase)
		setField(o.Fields, "volumeName", n.name(c.Spec.VolumeName))
		if c.Spec.StorageClassName != nil {
			setField(o.Fields, "storageClassName", *c.Spec.StorageClassName)
		}
		// Sizes and the resize status: what volume expansion changes.
		setField(o.Fields, "request", quantity(c.Spec.Resources.Requests))
		setField(o.Fields, "capacity", quantity(c.Status.Capacity))
		setField(o.Fields, "allocatedResources", quantity(c.Status.AllocatedResources))
		setField(o.Fields, "allocatedResourceStatus", string(c.Status.AllocatedResourceStatuses[corev1.ResourceStorage]))
		for _, cond := range c.Status.Conditions {
			o.setCondition(string(cond.Type), string(cond.Status), cond.Reason, n.value(cond.Message))
		}
		add(o)
	}
	for _, pv := range objs.PVs {
		o := n.object("PersistentVolume", pv.ObjectMeta)
		o.Phase = string(pv.Status.Phase)
		if ref := pv.Spec.ClaimRef; ref != nil {
			setField(o.Fields, "claimRef", qualified(ref.Namespace, ref.Name))
		}
		setField(o.Fields, "storageClassName", pv.Spec.StorageClassName)
		setField(o.Fields, "reclaimPolicy", string(pv.Spec.PersistentVolumeReclaimPolicy))
		setField(o.Fields, "capacity", quantity(pv.Spec.Capacity))
		setField(o.Fields, "message", n.value(pv.Status.Message))
		if src := pv.Spec.CSI; src != nil {
			setField(o.Fields, "csi.driver", src.Driver)
			setField(o.Fields, "csi.volumeHandle", n.name(src.VolumeHandle))
			for k, v := range src.VolumeAttributes {
				setField(o.Fields, "csi.volumeAttributes."+k, n.value(v))
			}
		}
		add(o)
	}
}

// podObjects adds the pods: phase, node, containers, conditions.
func (n *Normaliser) podObjects(add func(Object), pods []corev1.Pod) {
	for _, p := range pods {
		if system(p.Namespace) {
			continue
		}
		o := n.object("Pod", p.ObjectMeta)
		o.Phase = string(p.Status.Phase)
		setField(o.Fields, "nodeName", p.Spec.NodeName)
		// What kubectl shows of the pod: each container's state.
		setField(o.Fields, "initContainers", containerStates(p.Status.InitContainerStatuses, false))
		setField(o.Fields, "containers", containerStates(p.Status.ContainerStatuses, true))
		for _, cond := range p.Status.Conditions {
			o.setCondition(string(cond.Type), string(cond.Status), cond.Reason, n.value(cond.Message))
		}
		add(o)
	}
}

// attachmentObjects adds the VolumeAttachments and the nodes, with the
// volumes each node has attached and in use.
func (n *Normaliser) attachmentObjects(add func(Object), objs Objects) {
	for _, va := range objs.VolumeAttachments {
		o := n.object("VolumeAttachment", va.ObjectMeta)
		setField(o.Fields, "attacher", va.Spec.Attacher)
		setField(o.Fields, "nodeName", va.Spec.NodeName)
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
			setField(o.Fields, "source", n.name(*pv))
		}
		o.Fields["attached"] = fmt.Sprint(va.Status.Attached)
		if e := va.Status.AttachError; e != nil {
			setField(o.Fields, "attachError", n.value(e.Message))
		}
		if e := va.Status.DetachError; e != nil {
			setField(o.Fields, "detachError", n.value(e.Message))
		}
		add(o)
	}
	for _, node := range objs.Nodes {
		o := n.object("Node", node.ObjectMeta)
		var attached, inUse []string
		for _, a := range node.Status.VolumesAttached {
			attached = append(attached, n.value(string(a.Name)))
		}
		for _, u := range node.Status.VolumesInUse {
			inUse = append(inUse, n.value(string(u)))
		}
		sort.Strings(attached)
		sort.Strings(inUse)
		setField(o.Fields, "volumesAttached", strings.Join(attached, ", "))
		setField(o.Fields, "volumesInUse", strings.Join(inUse, ", "))
		setField(o.Fields, "taints", nodeTaints(node.Spec.Taints))
		for _, cond := range node.Status.Conditions {
			o.setCondition(string(cond.Type), string(cond.Status), cond.Reason, n.value(cond.Message))
		}
		add(o)
	}
}

// nodeTaints shows a node's taints as key:effect, sorted: the list is a
// set (a key and effect at most once, API validation), and what reads it —
// the scheduler's TaintToleration, the taint eviction controller — reads
// it as one, so its order says nothing but which write came first. The
// real node lifecycle controller adds the unreachable NoSchedule and
// NoExecute taints in separate passes, in either order
// (pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// doNoScheduleTaintingPass and doNoExecuteTaintingPass); the simulated one
// in one write.
func nodeTaints(taints []corev1.Taint) string {
	out := make([]string, len(taints))
	for i, t := range taints {
		out[i] = t.Key + ":" + string(t.Effect)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// driverObjects adds what describes the driver: CSINodes, storage
// classes, CSIDrivers.
func (n *Normaliser) driverObjects(add func(Object), objs Objects) {
	for _, cn := range objs.CSINodes {
		o := n.object("CSINode", cn.ObjectMeta)
		for _, d := range cn.Spec.Drivers {
			v := "nodeID=" + d.NodeID
			if len(d.TopologyKeys) > 0 {
				v += " topologyKeys=" + strings.Join(d.TopologyKeys, ",")
			}
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				v += fmt.Sprintf(" allocatable=%d", *d.Allocatable.Count)
			}
			o.Fields["driver "+d.Name] = v
		}
		add(o)
	}
	for _, sc := range objs.StorageClasses {
		o := n.object("StorageClass", sc.ObjectMeta)
		setField(o.Fields, "provisioner", sc.Provisioner)
		if sc.ReclaimPolicy != nil {
			setField(o.Fields, "reclaimPolicy", string(*sc.ReclaimPolicy))
		}
		if sc.VolumeBindingMode != nil {
			setField(o.Fields, "volumeBindingMode", string(*sc.VolumeBindingMode))
		}
		add(o)
	}
	for _, d := range objs.CSIDrivers {
		o := n.object("CSIDriver", d.ObjectMeta)
		if d.Spec.AttachRequired != nil {
			o.Fields["attachRequired"] = fmt.Sprint(*d.Spec.AttachRequired)
		}
		if d.Spec.PodInfoOnMount != nil {
			o.Fields["podInfoOnMount"] = fmt.Sprint(*d.Spec.PodInfoOnMount)
		}
		add(o)
	}
}
