package cluster

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/trace"
)

// DescribeWrite turns an API write into a timeline entry that says what
// changed in words a storage engineer looks for: phases, binding,
// attachment, deletion. The real backend (package realcluster) describes
// the writes it observes with it too, so that both timelines read alike.
func DescribeWrite(w fakekube.Write) trace.Entry {
	verb := w.Verb
	if w.Subresource != "" && w.Subresource != "binding" {
		verb += " " + w.Subresource
	}
	obj := w.Kind + " "
	if w.Namespace != "" {
		obj += w.Namespace + "/"
	}
	obj += w.Name
	e := trace.Entry{Kind: trace.API, Actor: w.Actor, Verb: verb, Object: obj,
		Write: &trace.APIWrite{Verb: w.Verb, Subresource: w.Subresource, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name,
			Object: w.Object, Removed: w.Removed}}
	if w.Removed {
		e.Detail = "removed"
		return e
	}
	var details []string
	switch o := w.Object.(type) {
	case *coordinationv1.Lease:
		if o.Spec.RenewTime != nil {
			details = append(details, "renewed")
		}
	case *corev1.PersistentVolumeClaim:
		details = append(details, "phase="+string(o.Status.Phase))
		if o.Spec.VolumeName != "" {
			details = append(details, "volume="+o.Spec.VolumeName)
		}
	case *corev1.PersistentVolume:
		details = append(details, "phase="+string(o.Status.Phase))
		if o.Spec.CSI != nil {
			details = append(details, "handle="+o.Spec.CSI.VolumeHandle)
		}
	case *corev1.Pod:
		details = append(details, "phase="+string(o.Status.Phase))
		if o.Spec.NodeName != "" {
			details = append(details, "node="+o.Spec.NodeName)
		}
	case *storagev1.VolumeAttachment:
		details = append(details, fmt.Sprintf("attached=%t", o.Status.Attached))
		if o.Status.AttachError != nil {
			details = append(details, "attachError="+o.Status.AttachError.Message)
		}
	case *corev1.Node:
		details = append(details, "volumesInUse="+handles(o.Status.VolumesInUse))
		var attached []corev1.UniqueVolumeName
		for _, a := range o.Status.VolumesAttached {
			attached = append(attached, a.Name)
		}
		details = append(details, "volumesAttached="+handles(attached))
	case *storagev1.CSIStorageCapacity:
		details = append(details, "class="+o.StorageClassName)
		if o.Capacity != nil {
			details = append(details, "capacity="+o.Capacity.String())
		}
		if o.NodeTopology != nil {
			details = append(details, fmt.Sprintf("topology=%v", o.NodeTopology.MatchLabels))
		}
	case *corev1.Event:
		details = append(details, fmt.Sprintf("%s %s: %s", o.Type, o.Reason, o.Message))
		e.Object = "Event for " + o.InvolvedObject.Kind + " " + qualified(o.InvolvedObject.Namespace, o.InvolvedObject.Name)
	}
	if m, err := meta.Accessor(w.Object); err == nil {
		if m.GetDeletionTimestamp() != nil {
			details = append(details, "deleting")
		}
		if f := m.GetFinalizers(); len(f) > 0 && w.Kind != "Namespace" {
			details = append(details, "finalizers=["+strings.Join(f, ",")+"]")
		}
	}
	e.Detail = strings.Join(details, " ")
	return e
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// handles lists the volume handles of unique volume names
// ("kubernetes.io/csi/<driver>^<handle>").
func handles(names []corev1.UniqueVolumeName) string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		s := string(n)
		if i := strings.LastIndex(s, "^"); i >= 0 {
			s = s[i+1:]
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, ",") + "]"
}
