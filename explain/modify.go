package explain

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// modifyingClaim explains a bound claim whose VolumeAttributesClass is
// being changed, or could not be (status.modifyVolumeStatus, written by
// the external-resizer's modify controller); false when there is no such
// modify to tell of.
func (w *walker) modifyingClaim(c *corev1.PersistentVolumeClaim, f Finding) bool {
	st := c.Status.ModifyVolumeStatus
	if st == nil {
		return false
	}
	asked, current := ptr.Deref(c.Spec.VolumeAttributesClassName, ""), ptr.Deref(c.Status.CurrentVolumeAttributesClassName, "")
	if e := w.ix.latestEvent("PersistentVolumeClaim", c.Namespace, c.Name, c.UID, "VolumeModifyFailed"); e != nil {
		f.Said = append(f.Said, said(e))
	}
	f.State = fmt.Sprintf("Bound to %s, modify %s", c.Spec.VolumeName, st.Status)
	switch st.Status {
	case corev1.PersistentVolumeClaimModifyVolumePending:
		f.Why = fmt.Sprintf("The claim asks for the VolumeAttributesClass %s, which did not exist when the external-resizer looked; "+
			"its volume keeps the class %s.", asked, classOrNone(current))
		f.Next = fmt.Sprintf("Create the class %s; the resizer takes the claim up again only when spec.volumeAttributesClassName changes.", asked)
	case corev1.PersistentVolumeClaimModifyVolumeInfeasible:
		f.Why = fmt.Sprintf("The driver refused to modify the volume to the class %s (InvalidArgument): its volume keeps the class %s. "+
			"The external-resizer tries the same class again only after its --retry-interval-max (5 min).", st.TargetVolumeAttributesClassName, classOrNone(current))
		f.Next = fmt.Sprintf("Name a class the driver accepts, such as the old one (%s), in spec.volumeAttributesClassName.", classOrNone(current))
	default:
		f.Why = fmt.Sprintf("The external-resizer is modifying the volume to the class %s (ControllerModifyVolume); until it ends, "+
			"the claim cannot change its target.", st.TargetVolumeAttributesClassName)
	}
	w.add(f)
	return true
}

func classOrNone(class string) string {
	if class == "" {
		return "(none)"
	}
	return class
}
