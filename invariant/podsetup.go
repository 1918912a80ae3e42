package invariant

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/trace"
)

// PodVolume is one volume of a pod that a CSI driver must set up, and
// where it is published for the pod now.
type PodVolume struct {
	// Name is the pod volume's name; What says what kind it is
	// ("persistentVolumeClaim", "inline csi:", "generic ephemeral").
	Name, What string
	// Targets are the paths where a NodePublishVolume succeeded for the pod
	// and no NodeUnpublishVolume followed; none means not set up.
	Targets []string
}

// PodVolumes reads from a run's history which of pod's CSI volumes that its
// containers use are published for it, by the same reading of publish
// targets as pod-volumes-set-up: for asking whether a pod that is Running
// really has its volumes.
func PodVolumes(entries []trace.Entry, pod *corev1.Pod) []PodVolume {
	objs := newObjects()
	targets := map[string]bool{} // this pod's published targets
	for _, e := range entries {
		objs.apply(e)
		c := e.Call
		if e.Kind != trace.CSI || c == nil || c.Code != 0 || podOfTarget(c.TargetPath) != string(pod.UID) {
			continue
		}
		switch e.Verb {
		case "NodePublishVolume":
			targets[c.TargetPath] = true
		case "NodeUnpublishVolume":
			delete(targets, c.TargetPath)
		}
	}
	var out []PodVolume
	for _, v := range pod.Spec.Volumes {
		name, what := csiVolumeName(objs, pod, v)
		if what == "" || !volumeutil.UsedByContainers(pod, v.Name) {
			continue
		}
		pv := PodVolume{Name: v.Name, What: what}
		for t := range targets {
			if name != "" && slices.Contains(strings.Split(t, "/"), name) {
				pv.Targets = append(pv.Targets, t)
			}
		}
		slices.Sort(pv.Targets)
		out = append(out, pv)
	}
	return out
}
