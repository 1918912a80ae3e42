package trace

import (
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// relations learns, entry by entry, which volume belongs to which claim,
// so that the page's filter finds a claim's CSI calls (which name only a
// volume handle) and a pod's attachments (which name only a volume).
type relations struct {
	claimOfVolume  map[string]string // PersistentVolume name → claim "namespace/name"
	volumeOfHandle map[string]string // CSI volume handle → PersistentVolume name
	claimOfUID     map[string]string // claim UID → claim "namespace/name"
}

func newRelations() *relations {
	return &relations{claimOfVolume: map[string]string{}, volumeOfHandle: map[string]string{}, claimOfUID: map[string]string{}}
}

// Subject keys: what the filter offers.
const (
	claimKey  = "claim "
	podKey    = "pod "
	volumeKey = "volume "
)

func nsName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// keys are the claims, pods and volumes e concerns, learning the
// relations it shows on the way.
func (r *relations) keys(e Entry) []string {
	set := map[string]bool{}
	claim := func(ns, name string) {
		if name != "" {
			set[claimKey+nsName(ns, name)] = true
		}
	}
	volume := func(name string) {
		if name != "" {
			set[volumeKey+name] = true
			if c, ok := r.claimOfVolume[name]; ok {
				set[claimKey+c] = true
			}
			// A provisioned volume is named pvc-<claim UID>
			// (external-provisioner's makeVolumeName), before the
			// claim says so.
			if uid, ok := strings.CutPrefix(name, "pvc-"); ok {
				if c, ok := r.claimOfUID[uid]; ok {
					set[claimKey+c] = true
				}
			}
		}
	}
	if w := e.Write; w != nil {
		switch o := w.Object.(type) {
		case *corev1.PersistentVolumeClaim:
			claim(o.Namespace, o.Name)
			if o.UID != "" {
				r.claimOfUID[string(o.UID)] = nsName(o.Namespace, o.Name)
			}
			if o.Spec.VolumeName != "" {
				r.claimOfVolume[o.Spec.VolumeName] = nsName(o.Namespace, o.Name)
				volume(o.Spec.VolumeName)
			}
		case *corev1.PersistentVolume:
			if ref := o.Spec.ClaimRef; ref != nil {
				r.claimOfVolume[o.Name] = nsName(ref.Namespace, ref.Name)
			}
			if o.Spec.CSI != nil {
				r.volumeOfHandle[o.Spec.CSI.VolumeHandle] = o.Name
			}
			volume(o.Name)
		case *corev1.Pod:
			set[podKey+nsName(o.Namespace, o.Name)] = true
			for _, v := range o.Spec.Volumes {
				switch {
				case v.PersistentVolumeClaim != nil:
					claim(o.Namespace, v.PersistentVolumeClaim.ClaimName)
				case v.Ephemeral != nil:
					// The generic ephemeral volume's claim is named
					// <pod>-<volume> (k8s.io/component-helpers/storage/ephemeral).
					claim(o.Namespace, o.Name+"-"+v.Name)
				}
			}
		case *storagev1.VolumeAttachment:
			if pv := o.Spec.Source.PersistentVolumeName; pv != nil {
				volume(*pv)
			}
		case *corev1.Event, *eventsv1.Event:
			ref := eventSubject(o)
			switch ref.Kind {
			case "PersistentVolumeClaim":
				claim(ref.Namespace, ref.Name)
			case "PersistentVolume":
				volume(ref.Name)
			case "Pod":
				set[podKey+nsName(ref.Namespace, ref.Name)] = true
			}
		case *snapshotv1.VolumeSnapshot:
			if src := o.Spec.Source.PersistentVolumeClaimName; src != nil {
				claim(o.Namespace, *src)
			}
		}
	}
	if c := e.Call; c != nil {
		if pv, ok := r.volumeOfHandle[c.Volume]; ok {
			volume(pv)
		}
		// CreateVolume is asked for the PersistentVolume's name.
		if c.Name != "" {
			volume(c.Name)
			if c.Volume != "" {
				r.volumeOfHandle[c.Volume] = c.Name
			}
		}
	}
	if d := e.Check; d != nil {
		if d.Pod != "" {
			set[podKey+nsName(d.Namespace, d.Pod)] = true
		}
		claim(d.Namespace, d.Claim)
		volume(d.Volume)
	}
	return sortedKeys(set)
}

// eventSubject is what an Event (core or events.k8s.io) is about.
func eventSubject(o any) corev1.ObjectReference {
	switch e := o.(type) {
	case *corev1.Event:
		return e.InvolvedObject
	case *eventsv1.Event:
		return e.Regarding
	}
	return corev1.ObjectReference{}
}
