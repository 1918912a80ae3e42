package explain

import (
	"fmt"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/csisim/csisim/sim/volumeutil"
)

func (w *walker) volume(pv *corev1.PersistentVolume) {
	ix := w.ix
	ref := Ref{Kind: KindVolume, Name: pv.Name}
	f := Finding{Object: ref, State: string(pv.Status.Phase)}
	driver := ""
	if pv.Spec.CSI != nil {
		driver = pv.Spec.CSI.Driver
	}
	var follow []Ref
	if pv.Spec.ClaimRef != nil && pv.Status.Phase == corev1.VolumeBound {
		f.State = fmt.Sprintf("Bound to %s/%s", pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}
	if e := ix.latestEvent("PersistentVolume", "", pv.Name, pv.UID, "VolumeFailedDelete", "VolumeFailedRecycle"); e != nil {
		f.Said = append(f.Said, said(e))
	}
	if pv.Status.Message != "" {
		f.Said = append(f.Said, Said{Component: "persistentvolume-controller", Reason: string(pv.Status.Phase) + " " + pv.Status.Reason, Message: pv.Status.Message})
	}
	if pv.DeletionTimestamp != nil {
		f.State = fmt.Sprintf("Terminating (deleted %s), %s", ix.ago(pv.DeletionTimestamp.Time), f.State)
		var why []string
		for _, fin := range pv.Finalizers {
			switch {
			case fin == volumeutil.PVProtectionFinalizer && pv.Status.Phase == corev1.VolumeBound:
				why = append(why, fmt.Sprintf("%s: the pv-protection controller removes it once the volume is no longer Bound; it is bound to claim %s/%s.",
					fin, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name))
				follow = append(follow, Ref{Kind: KindClaim, Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name})
			case fin == volumeutil.PVProtectionFinalizer:
				why = append(why, fin+": the volume is not Bound, so the pv-protection controller removes it at its next sync.")
			case fin == storagehelpers.PVDeletionProtectionFinalizer:
				why = append(why, fmt.Sprintf("%s: the external-provisioner of %s removes it once it has deleted the volume in the storage (DeleteVolume).", fin, driver))
			case strings.HasPrefix(fin, volumeutil.AttacherFinalizerPrefix):
				var vas []string
				for _, va := range ix.attachmentsOf(pv.Name) {
					vas = append(vas, va.Name+" (node "+va.Spec.NodeName+")")
					follow = append(follow, Ref{Kind: KindAttachment, Name: va.Name})
				}
				if len(vas) > 0 {
					why = append(why, fmt.Sprintf("%s: the external-attacher removes it once no VolumeAttachment names the volume; still there: %s.", fin, strings.Join(vas, ", ")))
				} else {
					why = append(why, fin+": no VolumeAttachment names the volume any more, so the external-attacher removes it at its next sync.")
				}
			default:
				why = append(why, fin+": not one of Kubernetes' own; whoever set it must remove it.")
			}
		}
		f.Why = "Held by its finalizers. " + strings.Join(why, " ")
		w.add(f)
		for _, r := range follow {
			w.explain(r)
		}
		return
	}
	switch pv.Status.Phase {
	case corev1.VolumeReleased:
		switch pv.Spec.PersistentVolumeReclaimPolicy {
		case corev1.PersistentVolumeReclaimRetain:
			f.Why = "Its claim is gone and its reclaim policy is Retain: the volume and its data stay until someone deletes it."
			f.Next = "Delete the PV (and the volume in the storage) when its data is no longer needed, or clear spec.claimRef to let a new claim bind it."
		case corev1.PersistentVolumeReclaimDelete:
			f.Why = fmt.Sprintf("Its claim is gone and its reclaim policy is Delete: the external-provisioner of %s deletes the volume (DeleteVolume), then the PV.", driver)
			if len(f.Said) > 0 {
				f.Next = "The error above is why the delete does not go through; the provisioner retries with its backoff."
			}
		default:
			f.Why = "Its claim is gone."
		}
	case corev1.VolumeFailed:
		f.Why = "The PV controller could not reclaim it; its message says why."
	case corev1.VolumeAvailable:
		f.Why = "No claim is bound to it; a matching claim (class, access modes, size) binds it."
	case corev1.VolumeBound:
		var vas []string
		for _, va := range ix.attachmentsOf(pv.Name) {
			vas = append(vas, fmt.Sprintf("%s (node %s, attached=%t)", va.Name, va.Spec.NodeName, va.Status.Attached))
		}
		f.Why = "The volume is bound: nothing is stuck here."
		if len(vas) > 0 {
			f.Why += " Attachments: " + strings.Join(vas, ", ") + "."
		}
	default:
		f.Why = "The PV controller has not synced it yet."
	}
	w.add(f)
}

func (w *walker) volumeSnapshot(vs *snapv1.VolumeSnapshot) {
	ix := w.ix
	f := Finding{Object: Ref{Kind: KindVolumeSnapshot, Namespace: vs.Namespace, Name: vs.Name}}
	ready := vs.Status != nil && vs.Status.ReadyToUse != nil && *vs.Status.ReadyToUse
	f.State = fmt.Sprintf("readyToUse=%t", ready)
	if vs.Status != nil && vs.Status.Error != nil && vs.Status.Error.Message != nil {
		s := Said{Component: "snapshot-controller", Reason: "status.error", Message: *vs.Status.Error.Message}
		if vs.Status.Error.Time != nil {
			s.Last = vs.Status.Error.Time.Time
		}
		f.Said = append(f.Said, s)
	}
	for _, r := range []string{"SnapshotCreationFailed", "SnapshotContentCreationFailed", "SnapshotFinalizerError", "SnapshotDeletePending"} {
		if e := ix.latestEvent("VolumeSnapshot", vs.Namespace, vs.Name, vs.UID, r); e != nil {
			f.Said = append(f.Said, said(e))
		}
	}
	if vs.DeletionTimestamp != nil {
		f.State = fmt.Sprintf("Terminating (deleted %s)", ix.ago(vs.DeletionTimestamp.Time))
		var why []string
		for _, fin := range vs.Finalizers {
			switch fin {
			case volumeutil.VolumeSnapshotAsSourceFinalizer:
				var restoring []string
				for _, c := range ix.claims {
					if c.Namespace == vs.Namespace && c.Spec.DataSource != nil && c.Spec.DataSource.Kind == "VolumeSnapshot" &&
						c.Spec.DataSource.Name == vs.Name && c.Status.Phase == corev1.ClaimPending {
						restoring = append(restoring, c.Name)
					}
				}
				why = append(why, fmt.Sprintf("%s: the snapshot-controller removes it once no claim is being restored from the snapshot (pending: %s).",
					fin, orNone(restoring)))
			case volumeutil.VolumeSnapshotBoundFinalizer:
				why = append(why, fmt.Sprintf("%s: the snapshot-controller removes it once its VolumeSnapshotContent %s is gone (deletionPolicy Delete: the csi-snapshotter deletes the snapshot first).",
					fin, boundContent(vs)))
			default:
				why = append(why, fin+": whoever set it must remove it.")
			}
		}
		f.Why = "Held by its finalizers. " + strings.Join(why, " ")
		w.add(f)
		return
	}
	switch {
	case ready:
		f.Why = "The snapshot is ready: nothing is stuck here."
	case vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil:
		src := vs.Spec.Source.PersistentVolumeClaimName
		if src != nil {
			if c := ix.claims[key(vs.Namespace, *src)]; c != nil && c.Status.Phase != corev1.ClaimBound {
				f.Why = fmt.Sprintf("The snapshot-controller cannot take it yet: its source claim %s is not Bound.", *src)
				w.add(f)
				w.explain(Ref{Kind: KindClaim, Namespace: vs.Namespace, Name: *src})
				return
			}
		}
		f.Why = "The snapshot-controller has not bound it to a VolumeSnapshotContent yet: is its class there, its source claim Bound, the snapshot-controller running?"
	default:
		f.Why = fmt.Sprintf("Bound to %s; the csi-snapshotter of the driver takes the snapshot (CreateSnapshot) and reports it ready when the driver says so.", boundContent(vs))
	}
	w.add(f)
}

func boundContent(vs *snapv1.VolumeSnapshot) string {
	if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil {
		return *vs.Status.BoundVolumeSnapshotContentName
	}
	return "(none)"
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
