package diff

import (
	"fmt"
	"slices"
)

// snapshotObjects adds the snapshot kinds to a snapshot: what
// `kubectl get` shows of them, their binding and their errors.
func (n *Normaliser) snapshotObjects(add func(Object), objs Objects) {
	for _, c := range objs.VolumeSnapshotClasses {
		o := n.object("VolumeSnapshotClass", c.ObjectMeta)
		setField(o.Fields, "driver", c.Driver)
		setField(o.Fields, "deletionPolicy", string(c.DeletionPolicy))
		add(o)
	}
	for _, vs := range objs.VolumeSnapshots {
		if slices.Contains(systemNamespaces, vs.Namespace) {
			continue
		}
		o := n.object("VolumeSnapshot", vs.ObjectMeta)
		src := vs.Spec.Source
		if src.PersistentVolumeClaimName != nil {
			setField(o.Fields, "source.persistentVolumeClaimName", *src.PersistentVolumeClaimName)
		}
		if src.VolumeSnapshotContentName != nil {
			setField(o.Fields, "source.volumeSnapshotContentName", n.name(*src.VolumeSnapshotContentName))
		}
		if vs.Spec.VolumeSnapshotClassName != nil {
			setField(o.Fields, "volumeSnapshotClassName", *vs.Spec.VolumeSnapshotClassName)
		}
		if st := vs.Status; st != nil {
			if st.BoundVolumeSnapshotContentName != nil {
				setField(o.Fields, "boundVolumeSnapshotContentName", n.name(*st.BoundVolumeSnapshotContentName))
			}
			if st.ReadyToUse != nil {
				o.Fields["readyToUse"] = fmt.Sprint(*st.ReadyToUse)
			}
			if st.RestoreSize != nil {
				setField(o.Fields, "restoreSize", st.RestoreSize.String())
			}
			if st.CreationTime != nil {
				o.Fields["creationTime"] = "set"
			}
			if st.Error != nil && st.Error.Message != nil {
				setField(o.Fields, "error", n.value(*st.Error.Message))
			}
		}
		add(o)
	}
	for _, c := range objs.VolumeSnapshotContents {
		o := n.object("VolumeSnapshotContent", c.ObjectMeta)
		ref := c.Spec.VolumeSnapshotRef
		setField(o.Fields, "volumeSnapshotRef", n.name(qualified(ref.Namespace, ref.Name)))
		if ref.UID != "" {
			setField(o.Fields, "volumeSnapshotRef.uid", n.value(string(ref.UID)))
		}
		setField(o.Fields, "driver", c.Spec.Driver)
		setField(o.Fields, "deletionPolicy", string(c.Spec.DeletionPolicy))
		if c.Spec.VolumeSnapshotClassName != nil {
			setField(o.Fields, "volumeSnapshotClassName", *c.Spec.VolumeSnapshotClassName)
		}
		if h := c.Spec.Source.VolumeHandle; h != nil {
			setField(o.Fields, "source.volumeHandle", n.name(*h))
		}
		if h := c.Spec.Source.SnapshotHandle; h != nil {
			setField(o.Fields, "source.snapshotHandle", n.name(*h))
		}
		if m := c.Spec.SourceVolumeMode; m != nil {
			setField(o.Fields, "sourceVolumeMode", string(*m))
		}
		if st := c.Status; st != nil {
			if st.SnapshotHandle != nil {
				setField(o.Fields, "snapshotHandle", n.name(*st.SnapshotHandle))
			}
			if st.ReadyToUse != nil {
				o.Fields["readyToUse"] = fmt.Sprint(*st.ReadyToUse)
			}
			if st.RestoreSize != nil {
				o.Fields["restoreSize"] = fmt.Sprint(*st.RestoreSize)
			}
			if st.CreationTime != nil {
				o.Fields["creationTime"] = "set"
			}
			if st.Error != nil && st.Error.Message != nil {
				setField(o.Fields, "error", n.value(*st.Error.Message))
			}
		}
		add(o)
	}
}
