package trace

import (
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// relations learns, entry by entry, which volume belongs to which claim
// and which pods use a claim, so that the page's filter finds a claim's
// CSI calls (which name only a volume handle), a pod's attachments (which
// name only a volume), and a pod's volumes' calls and faults.
type relations struct {
	claimOfVolume  map[string]string          // PersistentVolume name → claim "namespace/name"
	volumeOfHandle map[string]string          // CSI volume handle → PersistentVolume name
	claimOfUID     map[string]string          // claim UID → claim "namespace/name"
	podOfUID       map[string]string          // pod UID → pod "namespace/name"
	podsOfClaim    map[string]map[string]bool // claim "namespace/name" → the pods that use it
	podsOnNode     map[string]map[string]bool // node → the pods bound to it
}

func newRelations() *relations {
	return &relations{claimOfVolume: map[string]string{}, volumeOfHandle: map[string]string{}, claimOfUID: map[string]string{},
		podOfUID: map[string]string{}, podsOfClaim: map[string]map[string]bool{}, podsOnNode: map[string]map[string]bool{}}
}

// relate adds b to the set of a in m.
func relate(m map[string]map[string]bool, a, b string) {
	if m[a] == nil {
		m[a] = map[string]bool{}
	}
	m[a][b] = true
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
		r.writeKeys(w.Object, set, claim, volume)
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
		// A publish's target path is in its pod's directory.
		if pod, ok := r.podOfUID[podUIDOfPath(c.TargetPath)]; ok {
			set[podKey+pod] = true
		}
	}
	if e.Kind == Fault {
		r.faultKeys(e, set, volume)
	}
	if d := e.Check; d != nil {
		if d.Pod != "" {
			set[podKey+nsName(d.Namespace, d.Pod)] = true
		}
		claim(d.Namespace, d.Claim)
		volume(d.Volume)
	}
	r.podsOfClaims(set)
	return sortedKeys(set)
}

// writeKeys are what an API write's object concerns, learning the
// relations it shows.
func (r *relations) writeKeys(obj runtime.Object, set map[string]bool, claim func(ns, name string), volume func(string)) {
	switch o := obj.(type) {
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
		pod := nsName(o.Namespace, o.Name)
		set[podKey+pod] = true
		if o.UID != "" {
			r.podOfUID[string(o.UID)] = pod
		}
		if o.Spec.NodeName != "" {
			relate(r.podsOnNode, o.Spec.NodeName, pod)
		}
		for _, v := range o.Spec.Volumes {
			name := ""
			switch {
			case v.PersistentVolumeClaim != nil:
				name = v.PersistentVolumeClaim.ClaimName
			case v.Ephemeral != nil:
				// The generic ephemeral volume's claim is named
				// <pod>-<volume> (k8s.io/component-helpers/storage/ephemeral).
				name = o.Name + "-" + v.Name
			}
			if name != "" {
				claim(o.Namespace, name)
				relate(r.podsOfClaim, nsName(o.Namespace, name), pod)
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

// faultKeys are what a fault concerns: the volume of a fault the fault
// proxy fired on a call (its object is the call's volume handle), the
// pods on a node that a node's fault (node-loss, driver-crash) strikes.
func (r *relations) faultKeys(e Entry, set map[string]bool, volume func(string)) {
	if pv, ok := r.volumeOfHandle[e.Object]; ok {
		volume(pv)
	}
	if node, ok := strings.CutPrefix(e.Object, "Node "); ok {
		for pod := range r.podsOnNode[node] {
			set[podKey+pod] = true
		}
	}
}

// podsOfClaims adds to an entry that concerns claims and no pod of its
// own the pods that use those claims: a volume's calls, faults and writes
// are part of the story of every pod it serves. An entry about one pod
// (its writes, its events, its publish) stays that pod's.
func (r *relations) podsOfClaims(set map[string]bool) {
	for k := range set {
		if strings.HasPrefix(k, podKey) {
			return
		}
	}
	var pods []string
	for k := range set {
		if c, ok := strings.CutPrefix(k, claimKey); ok {
			for pod := range r.podsOfClaim[c] {
				pods = append(pods, pod)
			}
		}
	}
	for _, pod := range pods {
		set[podKey+pod] = true
	}
}

// podUIDOfPath is the pod UID in a kubelet path under pods/<uid>/ (a
// publish's target path), "" if there is none.
func podUIDOfPath(path string) string {
	_, rest, ok := strings.Cut(path, "/pods/")
	if !ok {
		return ""
	}
	uid, _, _ := strings.Cut(rest, "/")
	return uid
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
