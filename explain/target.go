package explain

import (
	"fmt"
	"sort"
	"strings"
)

// The kinds Explain answers for.
const (
	KindPod              = "Pod"
	KindClaim            = "PersistentVolumeClaim"
	KindVolume           = "PersistentVolume"
	KindAttachment       = "VolumeAttachment"
	KindNode             = "Node"
	KindVolumeSnapshot   = "VolumeSnapshot"
	KindStorageClass     = "StorageClass"
	KindCSIDriver        = "CSIDriver"
	KindCSINode          = "CSINode"
	KindSnapshotContent  = "VolumeSnapshotContent"
	defaultNamespaceName = "default"
)

// kindNames maps what kubectl accepts for a kind (singular, plural, short
// name, and the resource.group form) to the kind Explain knows.
var kindNames = map[string]string{}

func init() {
	for kind, names := range map[string][]string{
		KindPod:            {"pod", "pods", "po"},
		KindClaim:          {"persistentvolumeclaim", "persistentvolumeclaims", "pvc"},
		KindVolume:         {"persistentvolume", "persistentvolumes", "pv"},
		KindAttachment:     {"volumeattachment", "volumeattachments", "va", "volumeattachments.storage.k8s.io"},
		KindNode:           {"node", "nodes", "no"},
		KindVolumeSnapshot: {"volumesnapshot", "volumesnapshots", "vs", "volumesnapshots.snapshot.storage.k8s.io"},
	} {
		for _, n := range names {
			kindNames[n] = kind
		}
	}
}

// namespaced says whether objects of kind live in a namespace.
func namespaced(kind string) bool {
	return kind == KindPod || kind == KindClaim || kind == KindVolumeSnapshot
}

// Ref names one object.
type Ref struct {
	Kind      string
	Namespace string // empty for cluster-scoped kinds
	Name      string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// ParseTarget reads KIND/NAME as kubectl does (pvc/data, pod/app,
// volumeattachment/csi-…, pv/pvc-…); namespace applies to namespaced
// kinds, "" meaning default.
func ParseTarget(arg, namespace string) (Ref, error) {
	kindName, name, ok := strings.Cut(arg, "/")
	if !ok || kindName == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("%q: want KIND/NAME, e.g. pvc/data or pod/app", arg)
	}
	kind, ok := kindNames[strings.ToLower(kindName)]
	if !ok {
		return Ref{}, fmt.Errorf("%q: csisim explain knows the kinds %s", kindName, strings.Join(knownKinds(), ", "))
	}
	ref := Ref{Kind: kind, Name: name}
	if namespaced(kind) {
		ref.Namespace = namespace
		if ref.Namespace == "" {
			ref.Namespace = defaultNamespaceName
		}
	}
	return ref, nil
}

// knownKinds lists the short names of the kinds, for messages.
func knownKinds() []string {
	return sortedStrings([]string{"pod", "pvc", "pv", "volumeattachment (va)", "node", "volumesnapshot (vs)"})
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
