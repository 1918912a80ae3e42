package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csisim/csisim/sim/volumeutil"
)

// maxWaitForUnmountDuration is how long the attach/detach controller waits
// for an unhealthy node's kubelet to report a volume unmounted before it
// detaches it anyway (kubernetes cmd/kube-controller-manager
// --attach-detach-reconcile-max-wait-unmount-duration default, used in
// pkg/controller/volume/attachdetach/reconciler/reconciler.go:
// forceDetach := !isHealthy && timeout).
const maxWaitForUnmountDuration = 6 * time.Minute

// attachRequired: a driver without a CSIDriver object, or whose object
// leaves attachRequired unset, needs attaching (kubernetes
// pkg/volume/csi/csi_attacher.go, isAttachRequired).
func (ix *index) attachRequired(driver string) bool {
	d := ix.drivers[driver]
	return d == nil || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// uniqueVolumeName is how node status lists a CSI volume (kubernetes
// pkg/volume/csi: "kubernetes.io/csi/<driver>^<handle>").
func uniqueVolumeName(driver, handle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName("kubernetes.io/csi/" + driver + "^" + handle)
}

// attachmentsOf are the VolumeAttachments of a PV.
func (ix *index) attachmentsOf(pv string) []*storagev1.VolumeAttachment {
	var out []*storagev1.VolumeAttachment
	for _, va := range ix.vaList {
		if src := va.Spec.Source.PersistentVolumeName; src != nil && *src == pv {
			out = append(out, va)
		}
	}
	return out
}

// csiVolumeOnNode follows a pod's CSI volume on its node: the attachment
// (if the driver needs one), then the driver's node plugin.
func (w *walker) csiVolumeOnNode(p *corev1.Pod, driver string, pv *corev1.PersistentVolume) {
	ix := w.ix
	nodeName := p.Spec.NodeName
	if ix.attachRequired(driver) {
		var mine *storagev1.VolumeAttachment
		var elsewhere []*storagev1.VolumeAttachment
		for _, va := range ix.attachmentsOf(pv.Name) {
			if va.Spec.NodeName == nodeName {
				mine = va
			} else {
				elsewhere = append(elsewhere, va)
			}
		}
		switch {
		case mine != nil && mine.Status.Attached:
			// attached here; on to the node plugin
		case mine == nil && len(elsewhere) > 0:
			// Multi-Attach: the controller waits for the other attachment to go.
			for _, va := range elsewhere {
				w.explain(Ref{Kind: KindAttachment, Name: va.Name})
			}
			return
		case mine == nil:
			w.add(Finding{Object: Ref{Kind: KindVolume, Name: pv.Name}, State: "not attached to " + nodeName,
				Why: fmt.Sprintf("Driver %s needs volumes attached (no CSIDriver says attachRequired: false), and no VolumeAttachment of this volume to %s exists yet: "+
					"the attach/detach controller of kube-controller-manager makes it.", driver, nodeName),
				Next: fmt.Sprintf("Is kube-controller-manager running, and does node %s let it manage attachment (annotation volumes.kubernetes.io/controller-managed-attach-detach)?", nodeName)})
			return
		default:
			w.explain(Ref{Kind: KindAttachment, Name: mine.Name})
			// An attachment elsewhere the controller did not count (a
			// stale one) is often why this one fails.
			for _, va := range elsewhere {
				if va.Status.Attached {
					w.explain(Ref{Kind: KindAttachment, Name: va.Name})
				}
			}
			return
		}
	}
	w.driverOnNode(nodeName, driver, p)
}

// driverOnNode adds a finding if the driver's node plugin is not
// registered with the node's kubelet.
func (w *walker) driverOnNode(nodeName, driver string, p *corev1.Pod) {
	ix := w.ix
	csiNode := ix.csiNodes[nodeName]
	if csiNode != nil && slices.ContainsFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver }) {
		return
	}
	f := Finding{Object: Ref{Kind: KindNode, Name: nodeName}, State: "driver " + driver + " not registered",
		Why: fmt.Sprintf("No node plugin of driver %s has registered with the kubelet on %s (CSINode %s lists %s), so the kubelet cannot stage or mount its volumes.",
			driver, nodeName, nodeName, csiNodeDrivers(csiNode)),
		Next: fmt.Sprintf("Run the driver's node plugin on %s (its DaemonSet: node selector, tolerations) with its node-driver-registrar; "+
			"the attachment and the mount are retried on their own once it has registered.", nodeName)}
	if p != nil {
		if e := ix.latestEvent("Pod", p.Namespace, p.Name, p.UID, "FailedMount", "FailedMapVolume"); e != nil && strings.Contains(e.Message, "not found in the list of registered CSI drivers") {
			f.Said = append(f.Said, said(e))
		}
	}
	if n := ix.nodes[nodeName]; n != nil && len(n.Spec.Taints) > 0 {
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		f.Why += fmt.Sprintf(" Node %s has the taints %s: does the plugin tolerate them?", nodeName, strings.Join(taints, ", "))
	}
	w.add(f)
}

// csiNodeDrivers lists a CSINode's drivers for messages.
func csiNodeDrivers(n *storagev1.CSINode) string {
	if n == nil {
		return "nothing: it does not exist"
	}
	if len(n.Spec.Drivers) == 0 {
		return "no driver"
	}
	var names []string
	for _, d := range n.Spec.Drivers {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

// attachment explains a VolumeAttachment: attaching, detaching, or
// attached and held.
func (w *walker) attachment(va *storagev1.VolumeAttachment) {
	ix := w.ix
	ref := Ref{Kind: KindAttachment, Name: va.Name}
	driver := va.Spec.Attacher
	pvName := ""
	if va.Spec.Source.PersistentVolumeName != nil {
		pvName = *va.Spec.Source.PersistentVolumeName
	}
	f := Finding{Object: ref}
	nodeName := va.Spec.NodeName
	hasFinalizer := slices.Contains(va.Finalizers, volumeutil.AttacherFinalizer(driver))
	switch {
	case va.DeletionTimestamp != nil:
		f.State = fmt.Sprintf("detaching from %s (deleted %s)", nodeName, ix.ago(va.DeletionTimestamp.Time))
		if e := va.Status.DetachError; e != nil {
			f.Said = append(f.Said, Said{Component: "external-attacher", Reason: "detachError", Message: e.Message, Last: e.Time.Time})
		}
		if hasFinalizer {
			f.Why = fmt.Sprintf("The finalizer %s holds it: the external-attacher of %s removes it once ControllerUnpublishVolume has succeeded.",
				volumeutil.AttacherFinalizer(driver), driver)
			if va.Status.DetachError != nil {
				f.Next = "The external-attacher retries the detach with its backoff (1 s doubling to 5 min); the driver's error above is what to fix."
			} else {
				f.Next = fmt.Sprintf("Is the external-attacher (csi-attacher) of %s running?", driver)
			}
		} else {
			f.Why = fmt.Sprintf("Held by the finalizers %s; whoever set them must remove them.", strings.Join(va.Finalizers, ", "))
		}
		w.add(f)
		return
	case !va.Status.Attached:
		f.State = "not attached to " + nodeName
		if e := va.Status.AttachError; e != nil {
			f.Said = append(f.Said, Said{Component: "external-attacher", Reason: "attachError", Message: e.Message, Last: e.Time.Time})
			f.Why = fmt.Sprintf("The external-attacher of %s tried to attach the volume to %s and failed; it retries with its backoff (1 s doubling to 5 min).", driver, nodeName)
		} else if !hasFinalizer {
			f.Why = fmt.Sprintf("No external-attacher has picked it up: the external-attacher of %s adds the finalizer %s before it attaches, and it is not there. "+
				"The attach/detach controller gives up each try after 2 min (\"timed out waiting for external-attacher\") and tries again.", driver, volumeutil.AttacherFinalizer(driver))
			f.Next = fmt.Sprintf("Run the csi-attacher sidecar of %s, or, if the driver needs no attach, give it a CSIDriver object with attachRequired: false.", driver)
		} else {
			f.Why = fmt.Sprintf("The external-attacher of %s is attaching the volume (ControllerPublishVolume) to %s.", driver, nodeName)
		}
		w.quoteAttachEvents(va, &f)
		w.add(f)
		csiNode := ix.csiNodes[nodeName]
		if va.Status.AttachError != nil && (csiNode == nil || !slices.ContainsFunc(csiNode.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver })) {
			w.driverOnNode(nodeName, driver, nil)
		}
		return
	}
	f.State = "attached to " + nodeName
	// Who wants it there?
	var claimNS, claimName string
	if pv := ix.volumes[pvName]; pv != nil && pv.Spec.ClaimRef != nil {
		claimNS, claimName = pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name
	}
	var users []*corev1.Pod
	for _, p := range ix.podList {
		if p.Spec.NodeName == nodeName && p.Namespace == claimNS && claimName != "" && usesClaim(p, claimName) && !podFinished(p) {
			users = append(users, p)
		}
	}
	if len(users) > 0 {
		var names []string
		for _, p := range users {
			names = append(names, p.Name)
		}
		f.Why = fmt.Sprintf("Pod %s on %s uses the volume (claim %s/%s), so the attach/detach controller keeps it attached there.",
			strings.Join(names, ", "), nodeName, claimNS, claimName)
		w.add(f)
		for _, p := range users {
			if p.DeletionTimestamp != nil {
				w.explain(Ref{Kind: KindPod, Namespace: p.Namespace, Name: p.Name})
			}
		}
		return
	}
	w.heldAttachment(va, f, driver, pvName, claimNS, claimName)
}

// quoteAttachEvents quotes the attach/detach controller's latest
// FailedAttachVolume about the pods that wait for this attachment.
func (w *walker) quoteAttachEvents(va *storagev1.VolumeAttachment, f *Finding) {
	pv := w.ix.volumes[ptrString(va.Spec.Source.PersistentVolumeName)]
	if pv == nil || pv.Spec.ClaimRef == nil {
		return
	}
	for _, p := range w.ix.podList {
		if p.Spec.NodeName == va.Spec.NodeName && p.Namespace == pv.Spec.ClaimRef.Namespace && usesClaim(p, pv.Spec.ClaimRef.Name) {
			if e := w.ix.latestEvent("Pod", p.Namespace, p.Name, p.UID, "FailedAttachVolume"); e != nil {
				f.Said = append(f.Said, said(e))
				return
			}
		}
	}
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// heldAttachment: attached, and no pod on its node wants it. Why has the
// attach/detach controller not detached it? (kubernetes
// pkg/controller/volume/attachdetach/reconciler/reconciler.go: a volume
// no longer wanted is detached when the node's kubelet no longer reports
// it mounted (node.status.volumesInUse), or at once when the node has the
// out-of-service taint, or when the node is unhealthy and
// maxWaitForUnmountDuration has passed since the detach was first
// wanted.)
func (w *walker) heldAttachment(va *storagev1.VolumeAttachment, f Finding, driver, pvName, claimNS, claimName string) {
	ix := w.ix
	nodeName := va.Spec.NodeName
	node := ix.nodes[nodeName]
	pv := ix.volumes[pvName]
	inUse := false
	if node != nil && pv != nil && pv.Spec.CSI != nil {
		inUse = slices.Contains(node.Status.VolumesInUse, uniqueVolumeName(driver, pv.Spec.CSI.VolumeHandle))
	}
	ready, since := nodeReady(node)
	healthy := node != nil && ready == corev1.ConditionTrue
	wantedUntil, known := w.lastWanted(nodeName, claimNS, claimName)
	due := wantedUntil.Add(maxWaitForUnmountDuration)
	dueText := fmt.Sprintf("6 min (maxWaitForUnmountDuration) after the last pod using the volume left %s; the snapshot does not say when that was", nodeName)
	if known {
		dueText = fmt.Sprintf("6 min (maxWaitForUnmountDuration) after the last pod using the volume left %s (%s): due %s", nodeName, ix.ago(wantedUntil), ix.in(due))
	}
	claimText := "no pod"
	if claimName != "" {
		claimText = fmt.Sprintf("no pod on %s uses its claim %s/%s", nodeName, claimNS, claimName)
	}
	switch {
	case node == nil:
		f.Why = fmt.Sprintf("The volume is still attached to %s, but %s, and node %s no longer exists. "+
			"The attach/detach controller cannot hear from a node that is gone that the volume is unmounted; it counts the node unhealthy and forces the detach %s.",
			nodeName, claimText, nodeName, dueText)
		f.Next = fmt.Sprintf("Wait for the forced detach, or delete the VolumeAttachment %s by hand (the external-attacher then unpublishes it; the controller notices at its next sync, within a minute).", va.Name)
	case hasTaint(node, corev1.TaintNodeOutOfService):
		f.Why = fmt.Sprintf("The volume is still attached to %s, but %s, and %s has the %s taint: the attach/detach controller detaches at once.", nodeName, claimText, nodeName, corev1.TaintNodeOutOfService)
		f.Next = "If it stays, see the attach/detach controller (kube-controller-manager) and the external-attacher."
	case !healthy && inUse:
		f.Why = fmt.Sprintf("The volume is still attached to %s, but %s. Node %s is not Ready (Ready=%s since %s), and its kubelet last reported the volume in use "+
			"(node.status.volumesInUse); with no kubelet to report it unmounted, the attach/detach controller forces the detach %s.",
			nodeName, claimText, nodeName, ready, ix.ago(since), dueText)
		f.Next = fmt.Sprintf("Wait for the forced detach; or, if %s is really down, taint it %s=nodeshutdown:NoExecute to detach at once.", nodeName, corev1.TaintNodeOutOfService)
	case inUse:
		f.Why = fmt.Sprintf("The volume is still attached to %s, but %s. The kubelet on %s still reports the volume in use (node.status.volumesInUse): "+
			"it has not finished unmounting it (NodeUnpublishVolume, NodeUnstageVolume); the attach/detach controller detaches only after that.",
			nodeName, claimText, nodeName)
		f.Next = fmt.Sprintf("See the kubelet's FailedUnmount events on %s and its node plugin of %s.", nodeName, driver)
	default:
		f.Why = fmt.Sprintf("The volume is still attached to %s, but %s, and %s does not use it (not in node.status.volumesInUse): "+
			"the attach/detach controller would detach it at once — unless it does not know this attachment. "+
			"It learns attachments only from its own operations and when it starts; a VolumeAttachment it did not make while running "+
			"(a stale one, restored or left by another controller) stays until kube-controller-manager restarts.", nodeName, claimText, nodeName)
		f.Next = fmt.Sprintf("Restart kube-controller-manager, or delete the VolumeAttachment %s by hand (the external-attacher then unpublishes the volume).", va.Name)
	}
	if known && (node == nil || (!healthy && inUse)) {
		f.Due = due
	}
	w.add(f)
	if node != nil && !healthy {
		w.explain(Ref{Kind: KindNode, Name: nodeName})
	}
}

// lastWanted is when the last pod using the claim on the node went, if
// the snapshot knows (its Gone list).
func (w *walker) lastWanted(nodeName, claimNS, claimName string) (time.Time, bool) {
	var last time.Time
	for _, g := range w.ix.gone {
		if g.Pod == nil || g.Pod.Spec.NodeName != nodeName || g.Pod.Namespace != claimNS || !usesClaim(g.Pod, claimName) {
			continue
		}
		if g.At.After(last) {
			last = g.At
		}
	}
	return last, !last.IsZero()
}
