package invariant

import (
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csisim/csisim/trace"
)

// A run of several CSI drivers (its CSI entries name their driver,
// trace.Entry's Driver) is judged driver by driver: each driver's calls
// against its own volumes, capabilities and objects, as if it ran alone
// beside the API history they share. A driver's STAGE_UNSTAGE_VOLUME says
// nothing of another's NodePublishVolume, nor does one driver's volume
// account for another's CreateVolume.

// drivers are the drivers the CSI entries name, in the order they first
// appear; none for a run of one driver.
func drivers(entries []trace.Entry) []string {
	var out []string
	for _, e := range entries {
		if e.Kind == trace.CSI && e.Driver != "" && !slices.Contains(out, e.Driver) {
			out = append(out, e.Driver)
		}
	}
	return out
}

// byDriver is h as each driver's own history (driverHistory), or h alone
// for a run of one driver.
func byDriver(h *History) []*History {
	names := drivers(h.Entries)
	if len(names) == 0 {
		return []*History{h}
	}
	out := make([]*History, len(names))
	for i, name := range names {
		out[i] = driverHistory(h, name, i == 0)
	}
	return out
}

// driverHistory is h for one driver: every entry but the CSI calls of
// other drivers (and the FAULT entries that carry another's call), and
// of the end state the objects of this driver: its PVs, VolumeAttachments,
// CSIDriver and snapshot contents, and the mounts of its volumes; the
// first driver also gets the mounts no driver's volume accounts for.
func driverHistory(h *History, name string, first bool) *History {
	out := &History{LateWrites: h.LateWrites, End: h.End, Driver: name}
	for _, e := range h.Entries {
		if e.Driver != "" && e.Driver != name {
			continue
		}
		out.Entries = append(out.Entries, e)
	}
	end := &out.End
	end.PersistentVolumes = slices.DeleteFunc(slices.Clone(h.End.PersistentVolumes), func(pv corev1.PersistentVolume) bool {
		return pv.Spec.CSI != nil && pv.Spec.CSI.Driver != name
	})
	end.VolumeAttachments = slices.DeleteFunc(slices.Clone(h.End.VolumeAttachments), func(va storagev1.VolumeAttachment) bool {
		return va.Spec.Attacher != name
	})
	end.CSIDrivers = slices.DeleteFunc(slices.Clone(h.End.CSIDrivers), func(d storagev1.CSIDriver) bool { return d.Name != name })
	end.VolumeSnapshotContents = slices.DeleteFunc(slices.Clone(h.End.VolumeSnapshotContents), func(c snapv1.VolumeSnapshotContent) bool {
		return c.Spec.Driver != name
	})
	owners := volumeNamesByDriver(h)
	end.Mounts = slices.DeleteFunc(slices.Clone(h.End.Mounts), func(m string) bool {
		owner := mountOwner(m, owners)
		return owner != name && (owner != "" || !first)
	})
	return out
}

// volumeNamesByDriver are the names of the PersistentVolumes of each
// driver, written in the run or left at its end.
func volumeNamesByDriver(h *History) map[string][]string {
	out := map[string][]string{}
	add := func(pv *corev1.PersistentVolume) {
		if pv.Spec.CSI != nil && !slices.Contains(out[pv.Spec.CSI.Driver], pv.Name) {
			out[pv.Spec.CSI.Driver] = append(out[pv.Spec.CSI.Driver], pv.Name)
		}
	}
	for _, e := range h.Entries {
		if w := e.Write; w != nil {
			if pv, ok := w.Object.(*corev1.PersistentVolume); ok {
				add(pv)
			}
		}
	}
	for i := range h.End.PersistentVolumes {
		add(&h.End.PersistentVolumes[i])
	}
	return out
}

// mountOwner is the driver whose volume a kubelet mount is, "" if none
// tells: a staging path names its driver (plugins/kubernetes.io/csi/
// <driver>/...), a pod's or a block volume's path its PersistentVolume.
func mountOwner(m string, volumes map[string][]string) string {
	for driver, pvs := range volumes {
		if strings.Contains(m, "/"+driver+"/") {
			return driver
		}
		for _, pv := range pvs {
			if strings.Contains(m, "/"+pv+"/") || strings.HasSuffix(m, "/"+pv) {
				return driver
			}
		}
	}
	return ""
}
