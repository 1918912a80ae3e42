package diff

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/trace"
)

// Learn records the placeholders for the generated names and UIDs of objs
// and calls; a name keeps the first placeholder it was given.
func (n *Normaliser) Learn(objs Objects, calls []trace.Entry) {
	claimOfUID := map[types.UID]string{}
	for _, c := range objs.PVCs {
		claim := qualified(c.Namespace, c.Name)
		claimOfUID[c.UID] = claim
		n.set(string(c.UID), "<uid of pvc "+claim+">")
		// The provisioner names the PV, and asks CreateVolume for a
		// volume, pvc-<claim UID>: known before the PV exists.
		n.set("pvc-"+string(c.UID), "<pv of "+claim+">")
	}
	n.learnVolumes(objs, calls, claimOfUID)
	for _, va := range objs.VolumeAttachments {
		if vaNameRE.MatchString(va.Name) {
			pv := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pv = n.name(*va.Spec.Source.PersistentVolumeName)
			}
			n.set(va.Name, "<attachment of "+pv+" to "+va.Spec.NodeName+">")
		}
		n.set(string(va.UID), "<uid of attachment "+n.name(va.Name)+">")
	}
	n.learnPodNames(objs.Pods)
	for _, p := range objs.Pods {
		n.set(string(p.UID), "<uid of pod "+qualified(p.Namespace, p.Name)+">")
		// The kubelet's handle of an inline csi: volume is made of the
		// pod's UID.
		for _, v := range p.Spec.Volumes {
			if v.CSI != nil {
				n.set(volumeutil.InlineVolumeHandle(p.UID, v.Name), "<inline volume "+v.Name+" of pod "+qualified(p.Namespace, p.Name)+">")
			}
		}
	}
	n.learnGroupSnapshots(objs)
	// A snapshot of a claim gets the content snapcontent-<uid>, and the
	// csi-snapshotter asks the driver for snapshot-<uid>; the handle the
	// driver returns is the snapshot's too. A group's member is named
	// after its group (groupsnapshotkinds.go).
	for _, vs := range objs.VolumeSnapshots {
		snap := qualified(vs.Namespace, n.name(vs.Name))
		n.set(string(vs.UID), "<uid of volumesnapshot "+snap+">")
		n.set("snapcontent-"+string(vs.UID), "<content of volumesnapshot "+snap+">")
		n.set("snapshot-"+string(vs.UID), "<snapshot of volumesnapshot "+snap+">")
	}
	for _, c := range objs.VolumeSnapshotContents {
		ref := c.Spec.VolumeSnapshotRef
		if c.Status != nil && c.Status.SnapshotHandle != nil && ref.Name != "" && !preProvisionedContent(c.Spec.Source.SnapshotHandle) {
			n.set(*c.Status.SnapshotHandle, "<handle of volumesnapshot "+qualified(ref.Namespace, ref.Name)+">")
		}
		n.set(string(c.UID), "<uid of volumesnapshotcontent "+n.name(c.Name)+">")
	}
	for _, node := range objs.Nodes {
		n.set(string(node.UID), "<uid of node "+node.Name+">")
	}
}

// preProvisionedContent: a content made by hand names its snapshot's
// handle itself (spec.source.snapshotHandle), the same in both clusters.
func preProvisionedContent(handle *string) bool { return handle != nil }

// learnVolumes names the PVs a provisioner made and the volume handles the
// driver generated, after their claims. A PersistentVolume made by hand
// (a pre-provisioned volume) keeps its name and its handle: the scenario
// wrote them, so both clusters have the same ones, and naming them by the
// claim they were bound to would depend on whether the first look at the
// cluster came before the binding or after.
func (n *Normaliser) learnVolumes(objs Objects, calls []trace.Entry, claimOfUID map[types.UID]string) {
	for _, pv := range objs.PVs {
		claim := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			claim = qualified(ref.Namespace, ref.Name)
		}
		if pvNameRE.MatchString(pv.Name) && claim != "" {
			n.set(pv.Name, "<pv of "+claim+">")
			if pv.Spec.CSI != nil {
				n.set(pv.Spec.CSI.VolumeHandle, "<volume of "+claim+">")
			}
		}
		n.set(string(pv.UID), "<uid of pv "+n.name(pv.Name)+">")
	}
	// CreateVolume "pvc-<uid> -> <handle>": the handle of a claim whose PV
	// may not exist yet, or not any more.
	for _, e := range calls {
		name, handle, ok := strings.Cut(e.Object, " -> ")
		if !ok || e.Verb != "CreateVolume" {
			continue
		}
		if claim, known := claimOfUID[types.UID(strings.TrimPrefix(name, "pvc-"))]; known {
			n.set(handle, "<volume of "+claim+">")
		}
		if p, known := n.names[name]; known && strings.HasPrefix(p, "<pv of ") {
			n.set(handle, "<volume of "+strings.TrimPrefix(p, "<pv of "))
		}
	}
}

// set gives raw its placeholder, unless it has one already.
func (n *Normaliser) set(raw, placeholder string) {
	if raw == "" {
		return
	}
	if _, known := n.names[raw]; !known {
		n.names[raw] = placeholder
		n.sorted = nil
	}
}
