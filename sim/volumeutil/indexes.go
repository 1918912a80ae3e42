package volumeutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"
)

// Informer indexes the components look objects up by, instead of listing
// a kind whole on every sync: the real controllers keep such indexes too
// (the PVC protection controller's pods by claim, the scheduler's pods by
// node), and without them a sync costs as much as the cluster is large.
const (
	// PodsByClaim indexes pods by the claims they use, "namespace/claim":
	// persistentVolumeClaim volumes and the claims of generic ephemeral
	// volumes, "<pod>-<volume>".
	PodsByClaim = "csisim/pods-by-claim"
	// PodsByNode indexes pods by spec.nodeName; unscheduled pods under "".
	PodsByNode = "csisim/pods-by-node"
	// AttachmentsByVolume indexes VolumeAttachments by the PersistentVolume
	// they attach.
	AttachmentsByVolume = "csisim/attachments-by-volume"
	// AttachmentsByNode indexes VolumeAttachments by spec.nodeName.
	AttachmentsByNode = "csisim/attachments-by-node"
	// VolumesByClaim indexes PersistentVolumes by their claimRef,
	// "namespace/name"; volumes with no claimRef under "".
	VolumesByClaim = "csisim/volumes-by-claim"
	// ClaimsByUID indexes PersistentVolumeClaims by their UID, the key the
	// external-provisioner queues claims by.
	ClaimsByUID = "csisim/claims-by-uid"
)

var indexFuncs = map[string]cache.IndexFunc{
	PodsByClaim: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		var keys []string
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			switch {
			case v.PersistentVolumeClaim != nil:
				keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
			case v.Ephemeral != nil:
				keys = append(keys, pod.Namespace+"/"+ephemeral.VolumeClaimName(pod, v))
			}
		}
		return keys, nil
	},
	PodsByNode: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	},
	AttachmentsByVolume: func(obj any) ([]string, error) {
		if va, ok := obj.(*storagev1.VolumeAttachment); ok && va.Spec.Source.PersistentVolumeName != nil {
			return []string{*va.Spec.Source.PersistentVolumeName}, nil
		}
		return nil, nil
	},
	AttachmentsByNode: func(obj any) ([]string, error) {
		if va, ok := obj.(*storagev1.VolumeAttachment); ok {
			return []string{va.Spec.NodeName}, nil
		}
		return nil, nil
	},
	ClaimsByUID: func(obj any) ([]string, error) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			return []string{string(claim.UID)}, nil
		}
		return nil, nil
	},
	VolumesByClaim: func(obj any) ([]string, error) {
		pv, ok := obj.(*corev1.PersistentVolume)
		if !ok {
			return nil, nil
		}
		if ref := pv.Spec.ClaimRef; ref != nil {
			return []string{ref.Namespace + "/" + ref.Name}, nil
		}
		return []string{""}, nil
	},
}

// IndexFunc is the function of a named index, for a cache made by hand.
func IndexFunc(name string) cache.IndexFunc { return indexFuncs[name] }

// AddIndexes adds the named indexes to an informer that lacks them; an
// informer shared by several components gets each once. Call it before
// the informer starts.
func AddIndexes(inf cache.SharedIndexInformer, names ...string) error {
	have := inf.GetIndexer().GetIndexers()
	add := cache.Indexers{}
	for _, n := range names {
		f, ok := indexFuncs[n]
		if !ok {
			return fmt.Errorf("no index %q", n)
		}
		if _, ok := have[n]; !ok {
			add[n] = f
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := inf.AddIndexers(add); err != nil {
		return fmt.Errorf("adding indexes %v: %w", names, err)
	}
	return nil
}

// ByIndex returns the objects an informer's index holds under key, as T
// (*corev1.Pod, *storagev1.VolumeAttachment, ...).
func ByIndex[T any](idx cache.Indexer, index, key string) ([]T, error) {
	objs, err := idx.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
