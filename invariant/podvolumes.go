package invariant

import (
	"fmt"
	"github.com/csisim/csisim/sim/volumeutil"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/trace"
)

// podVolumesSetUp: when a pod is reported Running, every volume of its spec
// that a CSI driver must set up (a claim bound to a CSI volume, an inline
// csi: volume, a generic ephemeral volume, an inline in-tree volume of a
// migrated plugin) is published for it. A pod that
// runs without its volume is a silent green: its container would write to
// an empty directory.
var podVolumesSetUp = Invariant{
	Name: "pod-volumes-set-up",
	Doc:  "a pod is Running only when every CSI volume of its spec (claim, inline csi:, generic ephemeral, in-tree inline of a migrated plugin) is published for it",
	Check: func(h *History) []Violation {
		objs := newObjects()
		// pod UID -> target -> the NodePublishVolume's Seq.
		published := map[string]map[string]int{}
		var found []Violation
		for _, e := range h.Entries {
			if c := e.Call; e.Kind == trace.CSI && c != nil && c.Code == 0 {
				pod := podOfTarget(c.TargetPath)
				switch {
				case pod == "":
				case e.Verb == "NodePublishVolume":
					ensure(published, pod)[c.TargetPath] = e.Seq
				case e.Verb == "NodeUnpublishVolume" && !h.LateWrites:
					// With late writes, a pod's Running may be recorded
					// after the unpublish that its deletion caused.
					delete(published[pod], c.TargetPath)
				}
			}
			var before *corev1.Pod
			if e.Write != nil {
				if p, ok := e.Write.Object.(*corev1.Pod); ok {
					before = objs.pods[string(p.UID)]
				}
			}
			objs.apply(e)
			pod, ok := runningNow(e, before)
			if !ok {
				continue
			}
			for _, v := range pod.Spec.Volumes {
				name, what := csiVolumeName(objs, pod, v)
				if what == "" || !volumeutil.UsedByContainers(pod, v.Name) {
					continue // a kubelet sets up only the volumes containers use
				}
				if d := volumeDriver(objs, pod, v); h.Driver != "" && d != "" && d != h.Driver {
					continue // another driver's, judged in its own history
				}
				if setUpFor(published[string(pod.UID)], name) {
					continue
				}
				found = append(found, Violation{
					Message: fmt.Sprintf("#%d pod %s/%s is Running, but its %s volume %q was never published for it (no NodePublishVolume for pod %s)",
						e.Seq, pod.Namespace, pod.Name, what, v.Name, pod.UID),
					Entries: []int{e.Seq},
				})
			}
		}
		return found
	},
}

// runningNow returns the pod an entry reports Running that was not Running
// before it.
func runningNow(e trace.Entry, before *corev1.Pod) (*corev1.Pod, bool) {
	if e.Write == nil || e.Write.Removed {
		return nil, false
	}
	p, ok := e.Write.Object.(*corev1.Pod)
	if !ok || p.Status.Phase != corev1.PodRunning || (before != nil && before.Status.Phase == corev1.PodRunning) {
		return nil, false
	}
	return p, true
}

// csiVolumeName says whether a pod volume needs a CSI driver to set it up
// (what kind it is, "" if it does not) and the name its publish target
// carries: the PV's name for claims, the pod volume's for inline ones; ""
// when the PV is not known yet.
func csiVolumeName(objs *objects, pod *corev1.Pod, v corev1.Volume) (name, what string) {
	claim := ""
	switch {
	case v.CSI != nil:
		return v.Name, "inline csi:"
	case v.Ephemeral != nil:
		// The ephemeral volume controller names the claim <pod>-<volume>.
		claim, what = pod.Name+"-"+v.Name, "generic ephemeral"
	case v.PersistentVolumeClaim != nil:
		claim, what = v.PersistentVolumeClaim.ClaimName, "persistentVolumeClaim"
	default:
		// An in-tree volume of a migrated plugin: published under the
		// translated volume's name (sim/migration Inline).
		if pv := migratedInline(pod, v); pv != nil {
			return pv.Name, "migrated in-tree inline"
		}
		return "", ""
	}
	c := objs.claims[pod.Namespace+"/"+claim]
	if c == nil || c.Spec.VolumeName == "" {
		return "", what
	}
	if pv := objs.pvs[c.Spec.VolumeName]; pv != nil && pv.Spec.CSI == nil {
		return "", "" // not a CSI volume: not this invariant's business
	}
	return c.Spec.VolumeName, what
}

// volumeDriver is the CSI driver of a pod volume, "" if not known yet.
func volumeDriver(objs *objects, pod *corev1.Pod, v corev1.Volume) string {
	if v.CSI != nil {
		return v.CSI.Driver
	}
	if pv := migratedInline(pod, v); pv != nil {
		return pv.Spec.CSI.Driver
	}
	name, _ := csiVolumeName(objs, pod, v)
	if pv := objs.pvs[name]; name != "" && pv != nil && pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver
	}
	return ""
}

// setUpFor: one of the targets is the volume's (a path element is its
// name), or, with the name unknown, there is any target.
func setUpFor(targets map[string]int, name string) bool {
	for t := range targets {
		if name == "" || slices.Contains(strings.Split(filepath.ToSlash(t), "/"), name) {
			return true
		}
	}
	return false
}

// migratedInline is a pod's inline in-tree volume of a migrated plugin as
// its CSI driver's volume, nil for any other volume (or one that cannot be
// translated).
func migratedInline(pod *corev1.Pod, v corev1.Volume) *corev1.PersistentVolume {
	pv, migrated, err := migration.Inline(&v, pod.Namespace)
	if !migrated || err != nil {
		return nil
	}
	return pv
}
