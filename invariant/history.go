package invariant

import (
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/trace"
)

// okCalls are the CSI entries whose calls succeeded, with their data.
func okCalls(entries []trace.Entry) []trace.Entry {
	var out []trace.Entry
	for _, e := range entries {
		if e.Kind == trace.CSI && e.Call != nil && e.Call.Code == codes.OK {
			out = append(out, e)
		}
	}
	return out
}

// objects replays the API writes: the last state of each object seen, as
// of some point in the timeline.
type objects struct {
	pvs map[string]*corev1.PersistentVolume // by name
	// handles maps a CSI volume handle to its PV's name.
	handles map[string]string
	claims  map[string]*corev1.PersistentVolumeClaim // by namespace/name
	pods    map[string]*corev1.Pod                   // by UID
	vas     map[string]*storagev1.VolumeAttachment   // by name
	vaSeq   map[string]int                           // the entry that last wrote a VA
}

func newObjects() *objects {
	return &objects{pvs: map[string]*corev1.PersistentVolume{}, handles: map[string]string{},
		claims: map[string]*corev1.PersistentVolumeClaim{}, pods: map[string]*corev1.Pod{},
		vas: map[string]*storagev1.VolumeAttachment{}, vaSeq: map[string]int{}}
}

// apply takes one entry into the state; entries that are not API writes
// with an object change nothing.
func (o *objects) apply(e trace.Entry) {
	if e.Kind != trace.API || e.Write == nil || e.Write.Object == nil {
		return
	}
	w := e.Write
	switch obj := w.Object.(type) {
	case *corev1.PersistentVolume:
		if w.Removed {
			delete(o.pvs, obj.Name)
			return
		}
		// An in-tree volume whose plugin migrated is judged as the CSI
		// volume the components treat it as.
		if csiPV := migration.CSIPV(obj); csiPV != nil {
			obj = csiPV
		}
		o.pvs[obj.Name] = obj
		if obj.Spec.CSI != nil {
			o.handles[obj.Spec.CSI.VolumeHandle] = obj.Name
		}
	case *corev1.PersistentVolumeClaim:
		key := obj.Namespace + "/" + obj.Name
		if w.Removed {
			delete(o.claims, key)
			return
		}
		o.claims[key] = obj
	case *corev1.Pod:
		if w.Removed {
			delete(o.pods, string(obj.UID))
			return
		}
		o.pods[string(obj.UID)] = obj
	case *storagev1.VolumeAttachment:
		if w.Removed {
			delete(o.vas, obj.Name)
			delete(o.vaSeq, obj.Name)
			return
		}
		o.vas[obj.Name] = obj
		o.vaSeq[obj.Name] = e.Seq
	}
}

// pvOf is the PV (as last written) whose CSI handle is vol, nil if none.
func (o *objects) pvOf(vol string) *corev1.PersistentVolume {
	return o.pvs[o.handles[vol]]
}

// singleNodeMode reports whether volume vol may be used on one node only:
// by its PV's access modes as the kubelet reads them (the first), or,
// with no PV known, by the CSI access mode the call asked for.
func singleNodeMode(pv *corev1.PersistentVolume, csiMode string) bool {
	if pv != nil && len(pv.Spec.AccessModes) > 0 {
		m := pv.Spec.AccessModes[0]
		return m == corev1.ReadWriteOnce || m == corev1.ReadWriteOncePod
	}
	return strings.HasPrefix(csiMode, "SINGLE_NODE_")
}

// singlePodMode reports whether a volume may be used by one pod only.
func singlePodMode(pv *corev1.PersistentVolume, csiMode string) bool {
	if pv != nil && len(pv.Spec.AccessModes) > 0 {
		return pv.Spec.AccessModes[0] == corev1.ReadWriteOncePod
	}
	return csiMode == "SINGLE_NODE_SINGLE_WRITER"
}

// podOfTarget is the UID of the pod a publish target belongs to, as the
// kubelet lays targets out: .../pods/<uid>/volumes/... for a filesystem,
// .../volumeDevices/publish/<pv>/<uid> for a block volume; "" if neither.
func podOfTarget(target string) string {
	parts := strings.Split(filepath.ToSlash(target), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "pods" && parts[i+2] == "volumes" {
			return parts[i+1]
		}
	}
	for i := 0; i+3 < len(parts); i++ {
		if parts[i] == "volumeDevices" && parts[i+1] == "publish" {
			return parts[i+3]
		}
	}
	return ""
}

// nodeOf names where a node service call ran: its Kubernetes node, or its
// CSI node ID.
func nodeOf(c *trace.CSICall) string {
	if c.Node != "" {
		return c.Node
	}
	return c.NodeID
}

// attachedVolume is the CSI volume handle a VolumeAttachment's source
// names: its PV's, or an inline (migrated) volume's; "" if not known.
func attachedVolume(o *objects, src storagev1.VolumeAttachmentSource) string {
	if src.PersistentVolumeName != nil {
		if pv := o.pvs[*src.PersistentVolumeName]; pv != nil && pv.Spec.CSI != nil {
			return pv.Spec.CSI.VolumeHandle
		}
		return ""
	}
	if src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil {
		return src.InlineVolumeSpec.CSI.VolumeHandle
	}
	return ""
}
